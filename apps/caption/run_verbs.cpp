// attn-caption eval | caption: a trained model on a split of a captioning data set
// (attn/families/caption/run.hpp).
#include <cmath>
#include <cstdio>
#include <string>

#include "attn/families/caption/run.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::caption_tool {
namespace {

namespace po = boost::program_options;

void add_common(cli::Options& opts) {
  opts.model("trained model, HDF5 (attn-caption train)")
      .data("image-captioning data set, HDF5 (attn-data mnist-strips, attn-data shapes)")
      .split("test");
  opts.batch_size(64);
  // clang-format off
  opts.add()
      ("beam", cli::int_value(1)->notifier(cli::in_range<int64_t>("beam", 1, 1000)), "beam width (1: greedy search)")
      ("length-penalty", po::value<double>()->value_name("A")->default_value(0.0, "0")
                             ->notifier(cli::in_range<double>("length-penalty", 0.0, 100.0)),
       "beam search ranks captions by log p / |y|^A (0: raw log p)")
      ("max-len", cli::int_value(30)->notifier(cli::in_range<int64_t>("max-len", 1, 10000)),
       "the most words a caption may have");
  // clang-format on
  opts.threads();
}

decode::DecodeOptions decode_options(const cli::Options& opts) {
  return {.max_len = opts.get<int64_t>("max-len"),
          .beam = opts.get<int64_t>("beam"),
          .length_penalty = static_cast<float>(opts.get<double>("length-penalty")),
          .want_attention = true};
}

// "sequence accuracy 0.9870, BLEU-1..4 99.1/98.7/98.2/97.9"
std::string describe(const caption::Captions& c) {
  char line[200];
  std::snprintf(line, sizeof line, "sequence accuracy %.4f, BLEU-1..4 %.1f/%.1f/%.1f/%.1f", c.sequence_accuracy(),
                c.bleu[0], c.bleu[1], c.bleu[2], c.bleu[3]);
  return line;
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE [options]",
                    "Evaluates a model on one split. Teacher forced, on the reference captions: the loss, the\n"
                    "perplexity, the token and sequence accuracy, and the attention correctness (the fraction of\n"
                    "words naming an object whose attention peak lies in the object's box, with the split's\n"
                    "/boxes). Generated (greedy, or beam search with --beam): the sequence accuracy (captions equal\n"
                    "to the reference) and BLEU-1..4.");
  add_common(opts);
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const caption::CaptionerFile m = caption::load_captioner(opts.get<std::string>("model"));
  const std::string split = opts.get<std::string>("split");
  const io::File data = io::open_dataset(opts.get<std::string>("data"));           // the split may read from it
  const caption::CaptionSplit s = caption::read_captioner_split(data, split, m);   // refuses an empty split
  const int64_t batch = opts.get<int64_t>("batch-size");
  const caption::CaptionScores scores = caption::evaluate_captioner(m.model, s, batch);
  const caption::Captions captions = caption::caption_split(m.model, s, decode_options(opts), batch);
  char line[400];
  std::snprintf(line, sizeof line,
                "%s eval: %s: %lld images: loss %.4f, perplexity %.4f, token accuracy %.4f, sequence accuracy "
                "%.4f (teacher forced); attention correctness %.4f (%lld words); %s %s",
                kTool, split.c_str(), static_cast<long long>(s.size()), scores.stats.loss(),
                caption::caption_perplexity(scores.stats), caption::caption_token_accuracy(scores.stats),
                caption::caption_sequence_accuracy(scores.stats), scores.attention_correctness(),
                static_cast<long long>(scores.named_words),
                opts.get<int64_t>("beam") > 1 ? "beam:" : "greedy:", describe(captions).c_str());
  cli::print_summary(opts, line);
  return 0;
}

int cmd_caption(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE --out FILE [options]",
                    "Captions every image of one split (greedy, or beam search with --beam) and writes the\n"
                    "captions, their scores, the attention map behind every word (/attention [N, T, h, w]), the\n"
                    "images and the references, the layout of docs/FORMATS.md. Draw image 0 with one panel per\n"
                    "word (Xu et al. Fig. 3) with:\n"
                    "  attn-plot overlay OUT --index 0 --image /images --attention /attention --word-ids /predictions\n"
                    "    --word-vocab /vocab/tgt --out looked.png");
  add_common(opts);
  opts.out("captions file, HDF5");
  opts.distributed();   // its batches shared out under mpirun (train/split_run.hpp)
  if (!opts.parse(argc, argv)) return 0;
  const caption::CaptionerFile m = caption::load_captioner(opts.get<std::string>("model"));
  const std::string split = opts.get<std::string>("split");
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const caption::CaptionSplit s = caption::read_captioner_split(data, split, m);
  const caption::Captions c = caption::caption_split(m.model, s, decode_options(opts), opts.get<int64_t>("batch-size"));
  cli::write_output(opts, "attnlab/output", "captions",
                    [&](io::File& file) { caption::write_captions(file, c, s, m.vocab); });
  cli::print_summary(opts, std::string(kTool) + " caption: " + std::to_string(s.size()) + " images of " + split +
                               ": " + describe(c) + " -> " + opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::caption_tool
