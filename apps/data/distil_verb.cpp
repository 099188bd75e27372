// attn-data distil: sequence-level knowledge distillation (Kim & Rush 2016) of a translation set,
// its training targets replaced by a teacher's translations of them (datasets/distillation.hpp;
// layout in datasets/README.md).
#include "attn/datasets/distillation.hpp"
#include "verbs.hpp"

namespace attn::data_tool {

namespace po = boost::program_options;

int cmd_distil(int argc, char** argv) {
  cli::Options opts(kTool, "--data DATA --translations FILE --out FILE",
                    "Sequence-level knowledge distillation (Kim & Rush 2016): DATA with the targets of /train\n"
                    "replaced by a teacher's translations of its sources, the set a non-autoregressive\n"
                    "model trains on. FILE is the teacher's output for DATA's whole training split:\n"
                    "  attn-transformer translate --model TEACHER --data DATA --split train --beam 4 --out FILE\n"
                    "Sources, vocabularies, /valid and /test are copied unchanged; /train's attributes record\n"
                    "where the targets came from. Layout: datasets/README.md.");
  opts.data("the original translation data set, HDF5 (the one the teacher translated)");
  // clang-format off
  opts.add()
      ("translations", po::value<std::string>()->required()->value_name("FILE"),
       "the teacher's translations of DATA's /train, HDF5 (kind translation); - reads standard input");
  // clang-format on
  opts.out("distilled data set, HDF5");
  if (!opts.parse(argc, argv)) return 0;
  const std::string data_path = opts.get<std::string>("data"),
                    translations_path = opts.get<std::string>("translations");
  if (data_path == "-" && translations_path == "-")
    throw ConfigError("--data and --translations cannot both read standard input: give one of them as a file");

  const io::File data = io::open_dataset(data_path);
  const io::File translations = io::File::open_read(translations_path);
  const datasets::DistilledData distilled = datasets::distil(data, translations);
  cli::write_output(opts, kDatasetFormat, "distil",
                    [&](io::File& file) { datasets::write_distilled(file, distilled); });

  const std::string out = opts.get<std::string>("out");
  std::string line = opts.tool() + " distil: wrote " + (out == "-" ? "standard output" : out) + " (train " +
                     std::to_string(distilled.splits.train.tokens.size()) + " targets from " +
                     translations.display_name();
  if (distilled.empty_targets > 0)
    line += ", " + std::to_string(distilled.empty_targets) + " of them empty (EOS alone)";
  std::string copied;
  for (int k = 1; k < 3; ++k)
    if (distilled.splits[k].present)
      copied += std::string(copied.empty() ? "; " : ", ") + datasets::kSplitNames[k] + " " +
                std::to_string(distilled.splits[k].tokens.size());
  if (!copied.empty()) line += copied + " copied from " + data.display_name();
  cli::print_summary(opts, line + ")");
  return 0;
}

}  // namespace attn::data_tool
