// Whole-model speed of the Transformer T-small (issue 3, "Speed"), the attnlab side of
// experiments/perf/transformer (run.sh puts it beside the same model in PyTorch):
//   --mode train   one full training step (zero grads, Transformer::train_step, Adam) on 64
//                  pairs of source and target length 24; target tokens/s
//   --mode decode  decode::greedy (KV cache) of 64 sentences of length 24, exactly
//                  --new-tokens tokens each (the encoder included); generated tokens/s
// Config T-small: vocabulary 8000 (source and target), d_model 256, 4 heads, d_ff 1024, 3+3
// layers, dropout 0.1, label smoothing 0.1, tied output (the library's defaults otherwise).
// Prints one key=value line (perf_util.hpp) with the sgemm-bound limit of the model's products.
// --adapt 1: the thread governor of the tools' default (core/thread_governor.hpp) runs after
// every step; experiments/perf/busy measures it beside a CPU-bound neighbour. --running N: N of
// the --threads parts' threads run (what the governor does beside a neighbour).
#include <cmath>

#include "attn/core/thread_governor.hpp"
#include "attn/families/transformer/decode.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/optim/adam.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

// The model's matrix products (perf_util.hpp) for one training step or one greedy decoding.
bench::GemmList model_gemms(const transformer::TransformerConfig& c, int64_t B, int64_t L, int64_t new_tokens,
                            bool train) {
  const int64_t D = c.d_model, F = c.d_ff, V = c.tgt_vocab, NH = c.heads, HD = D / NH, N = B * L;
  bench::GemmList g;
  auto attention_block = [&](int64_t rows, int64_t kv_rows, int64_t T, int64_t S, bool project_kv, bool bwd) {
    perf::add_linear(g, rows, D, D, bwd);                  // q
    if (project_kv) {
      perf::add_linear(g, kv_rows, D, D, bwd);             // k
      perf::add_linear(g, kv_rows, D, D, bwd);             // v
    }
    perf::add_attention(g, B * NH, T, S, HD, bwd);
    perf::add_linear(g, rows, D, D, bwd);                  // o
  };
  auto ffn = [&](int64_t rows, bool bwd) {
    perf::add_linear(g, rows, D, F, bwd);
    perf::add_linear(g, rows, F, D, bwd);
  };
  for (int64_t l = 0; l < c.enc_layers; ++l) {
    attention_block(N, N, L, L, true, train);
    ffn(N, train);
  }
  if (train) {
    for (int64_t l = 0; l < c.dec_layers; ++l) {
      attention_block(N, N, L, L, true, true);   // masked self-attention (computed in full)
      attention_block(N, N, L, L, true, true);   // cross-attention
      ffn(N, true);
    }
    perf::add_linear(g, N, D, V, true);
    return g;
  }
  for (int64_t l = 0; l < c.dec_layers; ++l) {   // cross keys/values once per batch
    perf::add_linear(g, N, D, D, false);
    perf::add_linear(g, N, D, D, false);
  }
  for (int64_t t = 0; t < new_tokens; ++t) {
    for (int64_t l = 0; l < c.dec_layers; ++l) {
      attention_block(B, B, 1, t + 1, true, false);   // self: this position's k, v only
      attention_block(B, 0, 1, L, false, false);      // cross over the cached memory
      ffn(B, false);
    }
    perf::add_linear(g, B, D, V, false);
  }
  return g;
}

int64_t count_params(transformer::Transformer& model) {
  int64_t n = 0;
  for (const Param* p : model.params()) n += p->value.numel();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"mode", "train"}, {"threads", "1"}, {"adapt", "0"}, {"running", "0"}, {"limit", "1"}, {"steps", "5"}, {"warmup", "2"}, {"batch", "64"},
                         {"length", "24"}, {"new-tokens", "24"}, {"vocab", "8000"}, {"d-model", "256"},
                         {"heads", "4"}, {"d-ff", "1024"}, {"layers", "3"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  set_thread_adaptation(args.integer("adapt") != 0);   // the tools' default: fewer threads beside busy neighbours
  if (args.integer("running") > 0) set_running_threads(static_cast<int>(args.integer("running")));   // as the governor
  const std::string mode = args.str("mode");
  const int64_t B = args.integer("batch"), L = args.integer("length"), new_tokens = args.integer("new-tokens");
  transformer::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = args.integer("vocab");
  c.d_model = args.integer("d-model");
  c.heads = args.integer("heads");
  c.d_ff = args.integer("d-ff");
  c.enc_layers = c.dec_layers = args.integer("layers");
  c.dropout = 0.1f;
  c.label_smoothing = 0.1f;
  Rng init(1);
  transformer::Transformer model(c, init);
  const data::TokenBatch batch = perf::make_batch(B, L, c.tgt_vocab);
  const int64_t params = count_params(model);

  if (mode == "train") {
    const ParamList plist = model.params();
    optim::Adam adam({.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f});
    Rng dropout(2);
    int64_t t = 0, tokens = 0;
    auto step = [&] {
      zero_grads(plist);
      tokens = model.train_step(batch, dropout).tokens;
      adam.step(plist, ++t);
      adapt_threads();
    };
    const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), step);
    flops::reset();
    step();
    perf::print_result("train", static_cast<double>(tokens), times, params, model_gemms(c, B, L, 0, true),
                       2.0 * static_cast<double>(flops::count()), args.integer("limit") != 0);
    return 0;
  }
  if (mode == "decode") {
    const decode::DecodeOptions o{.max_len = new_tokens};
    int64_t tokens = 0;
    auto run = [&] {
      const decode::Decoded r = transformer::greedy(model, batch.src, batch.src_len, o);
      tokens = 0;
      for (const auto& s : r.tokens) tokens += static_cast<int64_t>(s.size());
    };
    const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), run);
    flops::reset();
    run();
    if (tokens != B * new_tokens)
      std::fprintf(stderr, "perf_transformer: greedy stopped early (EOS): %lld of %lld tokens\n",
                   static_cast<long long>(tokens), static_cast<long long>(B * new_tokens));
    perf::print_result("decode", static_cast<double>(tokens), times, params, model_gemms(c, B, L, new_tokens, false),
                       2.0 * static_cast<double>(flops::count()), args.integer("limit") != 0);
    return 0;
  }
  std::fprintf(stderr, "perf_transformer: --mode must be train or decode, got '%s'\n", mode.c_str());
  return 2;
}
