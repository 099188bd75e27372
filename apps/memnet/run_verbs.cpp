// attn-memnet eval | answer: a trained model on a split of a bAbI data set
// (attn/families/memnet/run.hpp).
#include <cmath>
#include <cstdio>

#include "attn/families/memnet/run.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::memnet_tool {
namespace {

// --split of --data, checked against the model's vocabulary.
memnet::QaSplit read_split(const cli::Options& opts, const io::File& data, const memnet::MemnetFile& m) {
  return memnet::read_memnet_split(data, opts.get<std::string>("split"), m);
}

// "1000 questions: loss 0.0123, accuracy 0.9990, error 0.0010"
std::string describe(const train::BatchStats& s) {
  char line[160];
  std::snprintf(line, sizeof line, "%lld questions: loss %.4f, accuracy %.4f, error %.4f",
                static_cast<long long>(s.count), s.loss(), memnet::answer_accuracy(s), memnet::answer_error(s));
  return line;
}

// One line per task when the split has several: "  task  1: accuracy 0.9990, error 0.0010 (1000 questions)"
std::string per_task(const memnet::MemnetScores& scores) {
  if (scores.tasks() < 2) return "";
  std::string out;
  for (int t = 1; t <= 20; ++t) {
    if (scores.task_questions[t] == 0) continue;
    char line[160];
    const double a = scores.task_accuracy(t);
    std::snprintf(line, sizeof line, "\n  task %2d: accuracy %.4f, error %.4f (%lld questions)", t, a, 1.0 - a,
                  static_cast<long long>(scores.task_questions[t]));
    out += line;
  }
  return out;
}

void add_common(cli::Options& opts) {
  opts.model("trained model, HDF5 (attn-memnet train)").data("bAbI data set, HDF5 (attn-data babi)").split("test");
  opts.batch_size(32);
  opts.threads();
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE [options]",
                    "Evaluates a model on one split: the mean cross-entropy of the answers (nats), the accuracy and\n"
                    "the error (1 - accuracy, as the paper's tables give it), and both per task when the split\n"
                    "holds several.");
  add_common(opts);
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const memnet::MemnetFile m = memnet::load_memnet(opts.get<std::string>("model"));
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const memnet::QaSplit s = read_split(opts, data, m);
  const memnet::MemnetScores scores = memnet::evaluate_memnet(m.model, s, opts.get<int64_t>("batch-size"));
  cli::print_summary(opts, std::string(kTool) + " eval: " + opts.get<std::string>("split") + ": " +
                               describe(scores.stats) + per_task(scores));
  return 0;
}

int cmd_answer(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE --out FILE [options]",
                    "Answers every question of one split and writes the predictions, whether each is right, every\n"
                    "hop's attention over the memory sentences (/attention/hops [N, hops, Ms]; /attention/support_hops\n"
                    "with the supporting facts as a first row), the split's stories, questions and supporting facts\n"
                    "and the vocabulary, the layout of docs/FORMATS.md. Draw question 0's hop table (Sukhbaatar et\n"
                    "al. Table 2) with:\n"
                    "  attn-plot table OUT --dataset /attention/support_hops --index 0 --transpose --row-ids /story\n"
                    "    --row-vocab /vocab/words --col-labels \"support|hop 1|hop 2|hop 3\" --out hops.png");
  add_common(opts);
  opts.out("answers file, HDF5");
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const memnet::MemnetFile m = memnet::load_memnet(opts.get<std::string>("model"));
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const memnet::QaSplit s = read_split(opts, data, m);
  const memnet::MemnetAnswers a = memnet::answer_memnet(m.model, s, opts.get<int64_t>("batch-size"));
  cli::write_output(opts, "attnlab/output", "memnet-answers",
                    [&](io::File& file) { memnet::write_memnet_answers(file, s, m.vocab, a); });
  cli::print_summary(opts, std::string(kTool) + " answer: " + opts.get<std::string>("split") + ": " +
                               describe(a.scores.stats) + " -> " + opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::memnet_tool
