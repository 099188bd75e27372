// Whole-model speed of the issue-4 RNN encoder-decoder, the attnlab side of
// experiments/perf/seq2seq (run.sh puts it beside the same model in PyTorch): one full training
// step (zero grads, Seq2Seq::train_step, Adam) on 64 pairs of source and target length 24;
// target tokens/s.
// Model: embedding 256, bidirectional GRU encoder (hidden 256 per direction), GRU decoder
// (hidden 256, input [e_t; c_t]), additive (concat) attention of dimension 256 in Bahdanau's
// style, output layer over [s_t; c_t; e_t] (1024 -> 8000), vocabulary 8000, no dropout, no
// label smoothing. Prints one key=value line (perf_util.hpp).
#include "attn/families/seq2seq/model.hpp"
#include "attn/optim/adam.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

// A recurrent layer over T steps of B rows, input I, hidden H, G gate rows: the input
// projection of all steps, then per step h W_hh^T forward and dg W_hh backward, and dW_hh once
// over all T*B rows. (A decoder's input projection is listed by the caller.)
void add_recurrence(bench::GemmList& g, int64_t T, int64_t B, int64_t H, int64_t G) {
  for (int64_t t = 0; t < T; ++t) {
    g.push_back({B, G, H});
    g.push_back({B, H, G});
  }
  g.push_back({G, H, T * B});
}

bench::GemmList model_gemms(const seq2seq::Seq2SeqConfig& c, int64_t B, int64_t S, int64_t T) {
  const int64_t E = c.embed_dim, H = c.hidden, Dv = c.memory_dim(), Dd = c.dec_hidden, A = c.attention_dim;
  const int64_t V = c.tgt_vocab, Do = c.output_input_dim();
  bench::GemmList g;
  for (int d = 0; d < 2; ++d) {   // bidirectional encoder
    perf::add_linear(g, S * B, E, 3 * H, true);
    add_recurrence(g, S, B, H, 3 * H);
  }
  perf::add_linear(g, B, Dv, Dd, true);                 // bridge
  perf::add_linear(g, S * B, Dv, A, true);              // U h_j, once
  perf::add_linear(g, T * B, E, 3 * Dd, true);          // decoder input projection, embedding part
  for (int64_t t = 0; t < T; ++t) {
    perf::add_linear(g, B, Dd, A, true);                // W s_{t-1}
    g.push_back({B * S, 1, A});                         // v . tanh(...)
    g.push_back({1, A, B * S});                         // dv
    g.push_back({1, Dv, S, B});                         // c = a h
    g.push_back({1, S, Dv, B});                         // da = dc h^T
    g.push_back({S, Dv, 1, B});                         // dh += a^T dc
    g.push_back({B, 3 * Dd, Dv});                       // c_t part of the input projection
    g.push_back({B, Dv, 3 * Dd});                       // its dx
  }
  g.push_back({3 * Dd, Dv, T * B});                     // its dW, once
  add_recurrence(g, T, B, Dd, 3 * Dd);
  perf::add_linear(g, T * B, Do, V, true);              // output layer
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"threads", "1"}, {"limit", "1"}, {"steps", "5"}, {"warmup", "2"}, {"batch", "64"}, {"length", "24"},
                         {"vocab", "8000"}, {"embed", "256"}, {"hidden", "256"}, {"attention-dim", "256"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), L = args.integer("length");
  seq2seq::Seq2SeqConfig c;
  c.src_vocab = c.tgt_vocab = args.integer("vocab");
  c.embed_dim = args.integer("embed");
  c.cell = nn::RnnCell::gru;
  c.hidden = c.dec_hidden = args.integer("hidden");
  c.layers = 1;
  c.bidirectional = true;
  c.attention = nn::ScoreKind::concat;
  c.attention_style = seq2seq::AttentionStyle::bahdanau;
  c.attention_dim = args.integer("attention-dim");
  c.dropout = 0.0f;
  c.label_smoothing = 0.0f;
  Rng init(1);
  seq2seq::Seq2Seq model(c, init);
  const data::TokenBatch batch = perf::make_batch(B, L, c.tgt_vocab);
  const ParamList plist = model.params();
  int64_t params = 0;
  for (const Param* p : plist) params += p->value.numel();

  optim::Adam adam({.lr = 1e-4f});
  Rng dropout(2);
  int64_t t = 0, tokens = 0;
  auto step = [&] {
    zero_grads(plist);
    tokens = model.train_step(batch, dropout).tokens;
    adam.step(plist, ++t);
  };
  const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), step);
  flops::reset();
  step();
  perf::print_result("train", static_cast<double>(tokens), times, params, model_gemms(c, B, L, L),
                     2.0 * static_cast<double>(flops::count()), args.integer("limit") != 0);
  return 0;
}
