// attn-ntm eval | run: a trained model on a split of a task's data set (attn/families/ntm/run.hpp).
#include <cstdio>

#include "attn/families/ntm/run.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::ntm_tool {
namespace {

// --split of --data as `model` reads it: the sequence layout, with the model's widths.
data::SequenceSplit read_split(const cli::Options& opts, const io::File& data, const ntm::NtmConfig& config) {
  return ntm::read_ntm_split(data, opts.get<std::string>("split"), config);
}

// "1000 sequences: cost 0.0123 bits per sequence, 0.0120 bit errors per sequence, bit error rate
// 0.00010, sequence accuracy 0.9900"
std::string describe(const train::BatchStats& s) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%lld sequences: cost %.4f bits per sequence, %.4f bit errors per sequence, bit error rate "
                "%.5f, sequence accuracy %.4f",
                static_cast<long long>(s.count), s.loss(), ntm::bit_errors_per_sequence(s), ntm::bit_error_rate(s),
                ntm::sequence_accuracy(s));
  return line;
}

void add_common(cli::Options& opts) {
  opts.model("trained model, HDF5 (attn-ntm train)").data("NTM task data set, HDF5 (attn-data copy, ...)").split("test");
  opts.batch_size(32);
  opts.threads();
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE [options]",
                    "Evaluates a model on one split: the cost in bits per sequence (binary cross-entropy of the\n"
                    "output bits), bit errors per sequence (outputs thresholded at 0.5), the bit error rate and\n"
                    "the fraction of sequences without an error.");
  add_common(opts);
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const ntm::NtmFile m = ntm::load_ntm(opts.get<std::string>("model"));
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const data::SequenceSplit s = read_split(opts, data, m.model.config());
  const train::BatchStats stats = ntm::evaluate_ntm(m.model, s, opts.get<int64_t>("batch-size"));
  cli::print_summary(opts, std::string(kTool) + " eval: " + opts.get<std::string>("split") + ": " + describe(stats));
  return 0;
}

int cmd_run(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE --out FILE [options]",
                    "Runs a model on one split and writes, per sequence, the inputs, targets, outputs and every\n"
                    "head's weighting at every step (/read_weights [N, T, R, N_mem], /write_weights), the layout\n"
                    "of docs/FORMATS.md. Draw sequence 0 as Graves et al. Fig. 6 with:\n"
                    "  attn-plot weights OUT --index 0 --inputs /inputs --outputs /outputs\n"
                    "    --write /write_weights --read /read_weights --out copy.png");
  add_common(opts);
  opts.out("run file, HDF5");
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const ntm::NtmFile m = ntm::load_ntm(opts.get<std::string>("model"));
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const data::SequenceSplit s = read_split(opts, data, m.model.config());
  const ntm::NtmRunResult r = ntm::run_ntm(m.model, s, opts.get<int64_t>("batch-size"));
  cli::write_output(opts, "attnlab/output", "ntm-run", [&](io::File& file) { ntm::write_ntm_run(file, s, r); });
  cli::print_summary(opts, std::string(kTool) + " run: " + opts.get<std::string>("split") + ": " + describe(r.stats) +
                               " -> " + opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::ntm_tool
