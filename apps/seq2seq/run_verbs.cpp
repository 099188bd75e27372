// attn-seq2seq eval | translate: a trained model on data (attn/families/seq2seq/run.hpp).
#include "attn/families/seq2seq/run.hpp"
#include "common/decoding.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::seq2seq_tool {
namespace {

// What a model reads of a data set: sources and targets with its own vocabularies.
cli::ModelReads reads(const seq2seq::Seq2SeqFile& m) {
  return {&m.src_vocab, &m.tgt_vocab, seq2seq::seq2seq_request(m.model.config())};
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  return cli::run_eval_verb(kTool, argc, argv, seq2seq::load_seq2seq, reads, seq2seq::evaluate_seq2seq);
}

int cmd_translate(int argc, char** argv) {
  cli::Options opts(kTool, cli::kTranslateSynopsis,
                    "Decodes the sources of one split with greedy (--beam 1) or beam search and writes the\n"
                    "predictions (/predictions, /predictions_len, /predictions_text, /predictions_detok,\n"
                    "/scores, /src, /vocab/*) and the alignment /attention/alignment [N, T, S]: row t holds\n"
                    "the attention weights over the source when token t was emitted (none without attention).\n"
                    "Score it with: attn-bleu --hyp OUT --ref DATA --split SPLIT; draw sentence 3 with:\n"
                    "  attn-plot heatmap OUT --dataset /attention/alignment --index 3 --x-ids /src\n"
                    "    --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt --out align.png");
  cli::add_translate_options(opts, /*default_length_penalty=*/1.0,
                             "length normalisation alpha of beam search, log p / |y|^alpha (0: raw log p)");
  opts.threads();
  if (!opts.parse(argc, argv)) return 0;
  const seq2seq::Seq2SeqFile m = seq2seq::load_seq2seq(opts.get<std::string>("model"));
  train::TranslateOptions to = cli::translate_options(opts);
  to.decode.want_attention = true;   // the alignment, for every model with attention
  cli::run_translate(opts, reads(m), m.src_vocab, m.tgt_vocab,
                     [&](const data::TokenSplit& s) { return seq2seq::translate(m.model, s, to); });
  return 0;
}

}  // namespace attn::seq2seq_tool
