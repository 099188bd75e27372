// --config files (INI, name = value), parsed against a train verb's kind of options (integers
// with ranges, reals, strings, choices, switches) as every tool parses them: bounded read,
// unknown names and bad values refused with the file named.
#include <boost/program_options.hpp>

#include "attn/core/error.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "fuzz_support.hpp"

using namespace attn;
namespace po = boost::program_options;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init();
  try {
    cli::Options opts("attn-fuzz", "[options]", "");
    opts.seed().threads().epochs(10).steps(1).lr(1e-3).batch_size(32);
    opts.add()("name", po::value<std::string>()->default_value("x"), "a string")(
        "ratio", po::value<double>()->default_value(0.5), "a real")("flag", po::bool_switch(), "a switch");
    std::string path = fuzz::as_file(data, size);
    std::string verb = "train", config = "--config", quiet = "--quiet";
    char* argv[] = {verb.data(), config.data(), path.data(), quiet.data()};
    if (opts.parse(4, argv)) {
      (void)opts.get<int64_t>("epochs");
      (void)opts.get<std::string>("name");
      (void)opts.get<double>("ratio");
    }
  } catch (const Error&) {
  } catch (po::error& e) {
    (void)cli::usage_message(e);   // the message the tools print
  }
  return 0;
}
