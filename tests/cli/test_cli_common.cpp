// apps/common in process: option parsing (--config, stray words, range checks, --help),
// dispatch's exit codes, and the progress display with an injected clock.
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/core/threading.hpp"
#include "attn/io/hdf5_file.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
#include "test_support.hpp"

using namespace attn;
namespace po = boost::program_options;

namespace {

// argv from words; argv[0] is the verb.
class Argv {
 public:
  Argv(std::initializer_list<std::string> words) : words_(words) {
    for (std::string& w : words_) ptrs_.push_back(w.data());
    ptrs_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> ptrs_;
};

// Captures what is written to a standard stream while alive.
class Capture {
 public:
  explicit Capture(std::ostream& os) : os_(os), old_(os.rdbuf(buf_.rdbuf())) {}
  ~Capture() { os_.rdbuf(old_); }
  std::string text() const { return buf_.str(); }

 private:
  std::ostream& os_;
  std::ostringstream buf_;
  std::streambuf* old_;
};

cli::Options demo_options() {
  cli::Options opts("attn-demo", "--data FILE [options]", "A demo verb.");
  opts.data("input").seed(7).epochs(3).lr(0.001).split("valid");
  // clang-format off
  opts.add()("width", cli::int_value(8)->notifier(cli::positive<int64_t>("width")), "width")
            ("name", po::value<std::string>()->default_value("x"), "a name")
            ("dropout", po::value<float>()->default_value(0.1f, "0.1")
                            ->notifier(cli::in_range<float>("dropout", 0.0f, 1.0f)), "dropout");
  // clang-format on
  return opts;
}

}  // namespace

TEST_CASE("options: defaults, the command line, and the effective configuration", "[unit][cli-common]") {
  cli::Options opts = demo_options();
  Argv a{"train", "--data", "d.h5", "--epochs", "5", "--quiet"};
  REQUIRE(opts.parse(a.argc(), a.argv()));
  CHECK(opts.get<std::string>("data") == "d.h5");
  CHECK(opts.get<int64_t>("epochs") == 5);
  CHECK(opts.get<int64_t>("seed") == 7);
  CHECK(opts.get<double>("lr") == 0.001);
  CHECK(opts.quiet());
  CHECK(opts.verb() == "train");
  CHECK(opts.command() == "attn-demo train --data d.h5 --epochs 5 --quiet");

  const std::vector<cli::ConfigEntry> cfg = opts.config();
  std::vector<std::string> names;
  for (const auto& e : cfg) names.push_back(e.name);
  // Declaration order; --quiet and the other meta options are not configuration.
  CHECK(names == std::vector<std::string>{"data", "seed", "epochs", "lr", "split", "width", "name", "dropout"});
  CHECK(std::get<int64_t>(cfg[2].value) == 5);
  CHECK_FALSE(cfg[2].defaulted);
  CHECK(cfg[1].defaulted);
  CHECK(std::get<double>(cfg[3].value) == 0.001);
  CHECK(cfg[7].text == "0.1");                         // a float echoes in its shortest form
  CHECK(std::get<double>(cfg[7].value) == 0.1);        // and is stored as that decimal
  CHECK(std::get<std::string>(cfg[6].value) == "x");

  std::ostringstream echo;
  opts.echo(echo);
  CHECK_THAT(echo.str(), Catch::StartsWith("attn-demo train: configuration\n"));
  CHECK_THAT(echo.str(), Catch::Contains("  --epochs   5\n"));
  CHECK_THAT(echo.str(), Catch::Contains("  --seed     7  (default)\n"));
}

TEST_CASE("options: --config INI values apply, and the command line wins", "[unit][cli-common]") {
  test::TempDir dir;
  {
    std::ofstream ini(dir.file("run.ini"));
    ini << "# a comment\nepochs = 9\nwidth = 3\nname = from-file\n";
  }
  cli::Options opts = demo_options();
  Argv a{"train", "--data", "d.h5", "--config", dir.file("run.ini"), "--width", "4", "--quiet"};
  REQUIRE(opts.parse(a.argc(), a.argv()));
  CHECK(opts.get<int64_t>("epochs") == 9);
  CHECK(opts.get<int64_t>("width") == 4);
  CHECK(opts.get<std::string>("name") == "from-file");

  {
    std::ofstream ini(dir.file("bad.ini"));
    ini << "epochz = 9\n";
  }
  cli::Options bad = demo_options();
  Argv b{"train", "--data", "d.h5", "--config", dir.file("bad.ini")};
  REQUIRE_THROWS_AS(bad.parse(b.argc(), b.argv()), ConfigError);
  cli::Options bad2 = demo_options();
  Argv b2{"train", "--data", "d.h5", "--config", dir.file("bad.ini")};
  REQUIRE_THROWS_WITH(bad2.parse(b2.argc(), b2.argv()),
                      Catch::Contains("bad.ini") && Catch::Contains("epochz"));

  cli::Options missing = demo_options();
  Argv c{"train", "--data", "d.h5", "--config", dir.file("none.ini")};
  REQUIRE_THROWS_WITH(missing.parse(c.argc(), c.argv()), Catch::Contains("--config: cannot read the file"));

  // A range check applies to values from the file too.
  {
    std::ofstream ini(dir.file("zero.ini"));
    ini << "epochs = 0\n";
  }
  cli::Options zero = demo_options();
  Argv z{"train", "--data", "d.h5", "--config", dir.file("zero.ini")};
  REQUIRE_THROWS_WITH(zero.parse(z.argc(), z.argv()), "--epochs must be > 0, got 0");
}

TEST_CASE("options: usage errors name the flag", "[unit][cli-common]") {
  auto parse_error = [](Argv a) -> std::string {
    cli::Options opts = demo_options();
    try {
      opts.parse(a.argc(), a.argv());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(parse_error({"train", "--data", "d", "--epochs", "0"}) == "--epochs must be > 0, got 0");
  CHECK(parse_error({"train", "--data", "d", "--lr", "-0.5"}) == "--lr must be > 0, got -0.5");
  CHECK(parse_error({"train", "--data", "d", "--dropout", "1.5"}) == "--dropout must be in [0, 1], got 1.5");
  CHECK(parse_error({"train", "--data", "d", "--split", "dev"}) ==
        "--split must be one of train, valid, test, got 'dev'");
  CHECK(parse_error({"train", "--data", "d", "--seed", "-1"}) == "--seed must be >= 0, got -1");
  CHECK_THAT(parse_error({"train", "--data", "d", "--bogus", "1"}), Catch::Contains("--bogus"));
  CHECK_THAT(parse_error({"train", "--data", "d", "stray"}), Catch::Contains("unexpected argument 'stray'"));
  CHECK_THAT(parse_error({"train"}), Catch::Contains("--data") && Catch::Contains("required"));
  CHECK_THAT(parse_error({"train", "--data", "d", "--epochs", "three"}), Catch::Contains("--epochs"));
  // No prefix guessing: --epoch is not --epochs.
  CHECK_THAT(parse_error({"train", "--data", "d", "--epoch", "2"}), Catch::Contains("--epoch"));
}

TEST_CASE("options: --help lists every option with its default and returns false", "[unit][cli-common]") {
  cli::Options opts = demo_options();
  Argv a{"train", "--help"};   // --data is required but --help comes first
  Capture out(std::cout);
  CHECK_FALSE(opts.parse(a.argc(), a.argv()));
  const std::string help = out.text();
  CHECK_THAT(help, Catch::StartsWith("Usage: attn-demo train --data FILE [options]"));
  CHECK_THAT(help, Catch::Contains("--epochs N (=3)"));
  CHECK_THAT(help, Catch::Contains("--lr X (=0.001)"));
  CHECK_THAT(help, Catch::Contains("--width N (=8)"));
  CHECK_THAT(help, Catch::Contains("--config FILE"));
  CHECK_THAT(help, Catch::Contains("--quiet"));
}

TEST_CASE("shell_quote leaves plain words alone and quotes the rest", "[unit][cli-common]") {
  CHECK(cli::shell_quote("--out") == "--out");
  CHECK(cli::shell_quote("data/m30k.h5") == "data/m30k.h5");
  CHECK(cli::shell_quote("two words") == "'two words'");
  CHECK(cli::shell_quote("it's") == "'it'\\''s'");
  CHECK(cli::shell_quote("") == "''");
}

TEST_CASE("parse_int_list reads comma-separated integers and names the flag otherwise", "[unit][cli-common]") {
  CHECK(cli::parse_int_list("buckets", "10,15,20") == std::vector<int64_t>{10, 15, 20});
  CHECK(cli::parse_int_list("index", "3") == std::vector<int64_t>{3});
  CHECK(cli::parse_int_list("index", "0, -1") == std::vector<int64_t>{0, -1});
  for (const char* bad : {"", "1,", ",1", "1,,2", "x", "1.5", "2x", "+", "1 2"})
    REQUIRE_THROWS_WITH(cli::parse_int_list("buckets", bad),
                        "--buckets must be integers separated by commas, got '" + std::string(bad) + "'");
}

namespace {
int verb_ok(int, char**) { return 0; }
int verb_config(int, char**) { throw ConfigError("--n must be > 0, got 0"); }
int verb_po(int, char**) { throw po::unknown_option("--nope"); }
int verb_io(int, char**) { throw IoError("cannot open HDF5 file 'x.h5'"); }
int verb_format(int, char**) { throw FormatError("x.h5: no dataset '/a'"); }
int verb_shape(int, char**) { throw ShapeError("bad shape"); }
int verb_data(int, char**) { throw DataError("NaN"); }
int verb_output(int, char**) { throw cli::OutputError("disk full"); }
int verb_runtime(int, char**) { throw std::runtime_error("boom"); }

int run(std::initializer_list<std::string> words, std::string* err = nullptr) {
  const std::vector<cli::Verb> verbs = {
      {"ok", verb_ok, "succeeds"},          {"config", verb_config, ""}, {"po", verb_po, ""},
      {"io", verb_io, ""},                  {"format", verb_format, ""}, {"shape", verb_shape, ""},
      {"data", verb_data, ""},              {"output", verb_output, ""}, {"runtime", verb_runtime, ""}};
  Argv a(words);
  Capture e(std::cerr);
  Capture o(std::cout);
  const int code = cli::dispatch("attn-demo", a.argc(), a.argv(), verbs);
  if (err) *err = e.text() + o.text();
  return code;
}
}  // namespace

TEST_CASE("dispatch maps exceptions to exit codes and prefixes messages", "[unit][cli-common]") {
  std::string err;
  CHECK(run({"attn-demo", "ok"}) == 0);
  CHECK(run({"attn-demo", "config"}, &err) == 2);
  CHECK(err == "attn-demo config: --n must be > 0, got 0\n");
  CHECK(run({"attn-demo", "po"}, &err) == 2);
  CHECK_THAT(err, Catch::StartsWith("attn-demo po: unrecognised option '--nope'") &&
                      Catch::Contains("attn-demo po --help"));
  CHECK(run({"attn-demo", "io"}, &err) == 3);
  CHECK(err == "attn-demo io: cannot open HDF5 file 'x.h5'\n");
  CHECK(run({"attn-demo", "format"}) == 3);
  CHECK(run({"attn-demo", "shape"}) == 3);
  CHECK(run({"attn-demo", "data"}) == 3);
  CHECK(run({"attn-demo", "output"}) == 1);
  CHECK(run({"attn-demo", "runtime"}, &err) == 1);
  CHECK(err == "attn-demo runtime: boom\n");

  CHECK(run({"attn-demo"}, &err) == 2);
  CHECK_THAT(err, Catch::Contains("missing verb"));
  CHECK(run({"attn-demo", "okk"}, &err) == 2);
  CHECK_THAT(err, Catch::Contains("unknown verb 'okk'") && Catch::Contains("did you mean 'ok'"));
  CHECK(run({"attn-demo", "--data", "x"}, &err) == 2);
  CHECK_THAT(err, Catch::Contains("expected a verb before options"));
  CHECK(run({"attn-demo", "--help"}, &err) == 0);
  CHECK_THAT(err, Catch::Contains("ok") && Catch::Contains("succeeds"));
  CHECK(run({"attn-demo", "--version"}, &err) == 0);
  CHECK(err == std::string("attn-demo ") + cli::version() + "\nBLAS: " + blas::library_config() + "\n");
  CHECK(err == cli::version_text("attn-demo"));
}

TEST_CASE("progress: plain lines at a bounded rate, with rate and ETA", "[unit][cli-common]") {
  double now = 100.0;
  std::ostringstream os;
  cli::ProgressOptions po_;
  po_.redraw = false;
  po_.line_interval = 10.0;
  po_.out = &os;
  po_.clock = [&] { return now; };
  {
    cli::Progress progress(100, po_);
    for (int step = 1; step <= 100; ++step) {
      now += 1.0;   // one step per second
      progress(step, 2.0 / step);
    }
    progress.finish();
  }
  std::vector<std::string> lines;
  std::istringstream in(os.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // Step 1 at t=1 is drawn, then one line per 10 s, then the last step: 1, 11, 21, ..., 91, 100.
  REQUIRE(lines.size() == 11);
  CHECK(lines[0] == "step 1/100 (1%)  loss 2.0000  1 step/s  ETA 1:39");
  CHECK(lines[1] == "step 11/100 (11%)  loss 0.1818  1 step/s  ETA 1:29");
  CHECK(lines[10] == "step 100/100 (100%)  loss 0.0200  1 step/s  1:40 elapsed");

  // A resumed training: the first step seen is 61, and the rate and ETA count from it.
  std::ostringstream resumed_os;
  po_.out = &resumed_os;
  {
    cli::Progress progress(100, po_);
    for (int step = 61; step <= 70; ++step) {
      now += 1.0;
      progress(step, 1.0);
    }
  }
  CHECK(resumed_os.str() == "step 61/100 (61%)  loss 1.0000  1 step/s  ETA 0:39\n");
}

TEST_CASE("progress: redraws in place on a terminal, units per second, quiet is silent",
          "[unit][cli-common]") {
  double now = 0.0;
  std::ostringstream os;
  cli::ProgressOptions opts;
  opts.redraw = true;
  opts.unit = "tok";
  opts.out = &os;
  opts.clock = [&] { return now; };
  {
    cli::Progress progress(0, opts);   // unknown total
    now = 2.0;
    progress.update(10, std::numeric_limits<double>::quiet_NaN(), 5000);
    now = 4.0;
    progress.update(20, 1.5, 10000);
  }   // the destructor ends the open line
  CHECK(os.str() == "\rstep 10  2500 tok/s  0:02 elapsed"
                    "\rstep 20  loss 1.5000  2500 tok/s  0:04 elapsed\n");

  // A rate given by the caller (the trainer's, without validation time) and a total learnt late.
  std::ostringstream given_os;
  opts.out = &given_os;
  {
    cli::Progress progress(0, opts);
    now = 5.0;
    progress.update(1, 2.0, 500, 2000.0);
    now = 10.0;
    progress.set_total(40);
    progress.update(20, 1.5, 10000, 3100.0);
  }
  CHECK(given_os.str() == "\rstep 1  loss 2.0000  2000 tok/s  0:01 elapsed"
                          "\rstep 20/40 (50%)  loss 1.5000  3100 tok/s  ETA 0:06\n");

  std::ostringstream quiet_os;
  opts.quiet = true;
  opts.out = &quiet_os;
  {
    cli::Progress progress(5, opts);
    progress(5, 1.0);
    progress.finish();
  }
  CHECK(quiet_os.str().empty());
  CHECK(cli::format_duration(3725) == "1:02:05");
  CHECK(cli::format_duration(59.4) == "0:59");
}

TEST_CASE("store_config writes /config attributes and create_output the root command",
          "[unit][cli-common]") {
  test::TempDir dir;
  const std::string path = dir.file("out.h5");
  cli::Options opts = demo_options();
  opts.out("result");
  Argv a{"train", "--data", "d.h5", "--out", path, "--width", "5", "--quiet"};
  REQUIRE(opts.parse(a.argc(), a.argv()));
  cli::write_output(opts, "attnlab/output", "demo", [](io::File& f) { f.write("/x", Tensor::full({2}, 1.0f)); });

  const io::File f = io::File::open_read(path);
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/output");
  CHECK(info.kind == "demo");
  CHECK(info.created_by == std::string("attn-demo ") + cli::version());
  CHECK(info.command == "attn-demo train --data d.h5 --out " + cli::shell_quote(path) + " --width 5 --quiet");
  CHECK(f.attr_int("/config", "width") == 5);
  CHECK(f.attr_int("/config", "epochs") == 3);
  CHECK(f.attr_double("/config", "lr") == 0.001);
  CHECK(f.attr_string("/config", "split") == "valid");
  CHECK_FALSE(f.has_attr("/config", "out"));
  CHECK_FALSE(f.has_attr("/config", "quiet"));

  // An output that cannot be created is a runtime failure, not bad input.
  cli::Options bad = demo_options();
  bad.out("result");
  Argv b{"train", "--data", "d.h5", "--out", dir.file("no/such/dir/out.h5"), "--quiet"};
  REQUIRE(bad.parse(b.argc(), b.argv()));
  REQUIRE_THROWS_AS(cli::create_output(bad, "attnlab/output", "demo"), cli::OutputError);
}

TEST_CASE("options: --threads is a ceiling the governor may lower, --fixed-threads keeps it", "[unit][cli-common]") {
  const int before = num_parts();
  for (const bool fixed : {false, true}) {
    cli::Options opts("attn-demo", "[options]", "");
    opts.threads();
    Argv args = fixed ? Argv{"run", "--threads", "2", "--fixed-threads", "--quiet"}
                      : Argv{"run", "--threads", "2", "--quiet"};
    REQUIRE(opts.parse(args.argc(), args.argv()));
    CHECK(num_parts() == 2);                   // work is divided by --threads either way
    CHECK(thread_adaptation() == !fixed);
  }
  set_thread_adaptation(false);
  set_num_threads(before);
}
