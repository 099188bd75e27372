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
//
// --arch cmlm: the same sizes as the non-autoregressive CMLM (issue 45, "Speed"; the attnlab side
// of experiments/perf/nat): the encoder reads [LENGTH] + the 24 source tokens, the decoder the 23
// target tokens without EOS (y), non-causal, and a length predictor sits on the encoder.
//   --mode train   zero grads, transformer::cmlm_mask of the batch (a uniform number of y's tokens
//                  masked per row), Transformer::train_step(CmlmBatch), Adam; target tokens (y's,
//                  masked or not) per second
//   --mode decode  transformer::mask_predict of the 64 sources, --iterations T, --length-beam L;
//                  the tokens of the chosen outputs per second, printed as mode mask-predict-T<T>
//                  (-L<L> when L > 1). The length predictor's weights are set to 0 and its bias
//                  ranks the offsets |y| - |x| as -1, -2, 0, -3, 1, ... (force_length_ranking), so
//                  the first length is the reference's, 23; the PyTorch twin sets the same.
//   --export FILE  writes the model's parameters, the batch, one cmlm_mask of it with the model's
//                  evaluate() loss, and mask_predict's tokens (T 4, length beam 1), for the twin's
//                  same-model check (experiments/perf/nat/torch_nat.py --check FILE), and exits.
#include <cmath>

#include "attn/core/thread_governor.hpp"
#include "attn/families/transformer/decode.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/families/transformer/nat.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/optim/adam.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

// The model's matrix products (perf_util.hpp), built from its stacks.
struct Gemms {
  const transformer::TransformerConfig& c;
  bench::GemmList g;

  // Self- or cross-attention of B sequences: q over `rows`, k and v (when project_kv) over
  // kv_rows, T queries on S keys, the output projection over `rows`.
  void attention_block(int64_t B, int64_t rows, int64_t kv_rows, int64_t T, int64_t S, bool project_kv, bool bwd) {
    const int64_t D = c.d_model;
    perf::add_linear(g, rows, D, D, bwd);   // q
    if (project_kv) {
      perf::add_linear(g, kv_rows, D, D, bwd);   // k
      perf::add_linear(g, kv_rows, D, D, bwd);   // v
    }
    perf::add_attention(g, B * c.heads, T, S, D / c.heads, bwd);
    perf::add_linear(g, rows, D, D, bwd);   // o
  }
  void ffn(int64_t rows, bool bwd) {
    perf::add_linear(g, rows, c.d_model, c.d_ff, bwd);
    perf::add_linear(g, rows, c.d_ff, c.d_model, bwd);
  }
  // The encoder over B sequences of S positions.
  void encoder(int64_t B, int64_t S, bool bwd) {
    for (int64_t l = 0; l < c.enc_layers; ++l) {
      attention_block(B, B * S, B * S, S, S, true, bwd);
      ffn(B * S, bwd);
    }
  }
  // The whole decoder over B sequences of T positions (teacher-forced, or CMLM's non-causal one:
  // a causal mask is computed in full) and a memory of S positions, then the output projection.
  void decoder(int64_t B, int64_t T, int64_t S, bool bwd) {
    for (int64_t l = 0; l < c.dec_layers; ++l) {
      attention_block(B, B * T, B * T, T, T, true, bwd);   // self-attention
      attention_block(B, B * T, B * S, T, S, true, bwd);   // cross-attention, keys/values of the memory
      ffn(B * T, bwd);
    }
    perf::add_linear(g, B * T, c.d_model, c.tgt_vocab, bwd);
  }
};

// One training step (encdec or cmlm) of B pairs of length L.
bench::GemmList train_gemms(const transformer::TransformerConfig& c, int64_t B, int64_t L) {
  Gemms m{c, {}};
  if (c.arch == transformer::TransformerArch::cmlm) {   // [LENGTH] + source; y = target without EOS
    m.encoder(B, L + 1, true);
    perf::add_linear(m.g, B, c.d_model, c.length_classes(), true);   // length predictor
    m.decoder(B, L - 1, L + 1, true);
  } else {
    m.encoder(B, L, true);
    m.decoder(B, L, L, true);
  }
  return std::move(m.g);
}

// Greedy decoding with the KV cache of B sentences of length L, new_tokens each.
bench::GemmList greedy_gemms(const transformer::TransformerConfig& c, int64_t B, int64_t L, int64_t new_tokens) {
  Gemms m{c, {}};
  const int64_t D = c.d_model;
  m.encoder(B, L, false);
  for (int64_t l = 0; l < c.dec_layers; ++l) {   // cross keys/values once per batch
    perf::add_linear(m.g, B * L, D, D, false);
    perf::add_linear(m.g, B * L, D, D, false);
  }
  for (int64_t t = 0; t < new_tokens; ++t) {
    for (int64_t l = 0; l < c.dec_layers; ++l) {
      m.attention_block(B, B, B, 1, t + 1, true, false);   // self: this position's k, v only
      m.attention_block(B, B, 0, 1, L, false, false);      // cross over the cached memory
      m.ffn(B, false);
    }
    perf::add_linear(m.g, B, D, c.tgt_vocab, false);
  }
  return std::move(m.g);
}

// mask_predict of B sources of length L: the encoder and length predictor once, then every
// iteration the whole decoder (its cross-attention keys and values projected again) over the
// rows x longest candidates.
bench::GemmList mask_predict_gemms(const transformer::TransformerConfig& c, int64_t B, int64_t L, int64_t rows,
                                   int64_t longest, int64_t iterations) {
  Gemms m{c, {}};
  m.encoder(B, L + 1, false);
  perf::add_linear(m.g, B, c.d_model, c.length_classes(), false);
  for (int64_t it = 0; it < iterations; ++it) m.decoder(rows, longest, L + 1, false);
  return std::move(m.g);
}

// cmlm: the length predictor's logits no longer depend on the source: weights 0, and a bias that
// ranks the offsets o = |y| - |x| by distance from `reference`, the shorter first on ties
// (reference, reference - 1, reference + 1, reference - 2, ...): -|o - r| - 0.5 [o > r]. The first
// `beam` lengths are then |x| + reference + 0, -1, +1, -2, ...
void force_length_ranking(transformer::Transformer& model, int64_t reference) {
  const int64_t max_len = model.config().max_len;
  for (Param* p : model.params()) {
    if (p->name == "length/W") p->value.zero();
    if (p->name != "length/b") continue;
    for (int64_t k = 0; k < p->value.numel(); ++k) {
      const int64_t d = k - max_len - reference;
      p->value.data()[k] = -static_cast<float>(std::abs(d)) - (d > 0 ? 0.5f : 0.0f);
    }
  }
}

int64_t count_params(transformer::Transformer& model) {
  int64_t n = 0;
  for (const Param* p : model.params()) n += p->value.numel();
  return n;
}

int64_t sum(const Tensor& lengths) {
  int64_t n = 0;
  for (int64_t i = 0; i < lengths.numel(); ++i) n += lengths.idata()[i];
  return n;
}

// --export (cmlm): what experiments/perf/nat/torch_nat.py --check needs to run the same model on
// the same inputs and compare: the parameters, the batch, one cmlm_mask of it (seed 3) with
// evaluate()'s objective, and mask_predict's tokens at T = 4, length beam 1.
void write_export(const std::string& path, transformer::Transformer& model, const data::TokenBatch& batch) {
  io::File file = io::File::create(path);
  for (const Param* p : model.params()) file.write("params/" + p->name, p->value);
  for (const auto& [key, value] : model.config().to_attrs()) file.set_attr("/", key, value);
  file.write("batch/src", batch.src);
  file.write("batch/tgt", batch.tgt);
  Rng masking(3);
  const transformer::CmlmBatch masked = transformer::cmlm_mask(batch, masking, model.mask_token_id());
  file.write("check/dec_in", masked.dec_in);
  file.write("check/targets", masked.targets);
  const data::LossStats s = model.evaluate(masked);
  file.set_attr("/", "check_loss", s.loss_sum / static_cast<double>(s.tokens));
  file.set_attr("/", "check_tokens", s.tokens);
  const int64_t iterations = 4;
  const decode::Decoded d = transformer::mask_predict(model, batch.src, batch.src_len,
                                                      {.iterations = iterations, .length_beam = 1});
  int64_t longest = 1;
  for (const auto& t : d.tokens) longest = std::max(longest, static_cast<int64_t>(t.size()));
  Tensor tokens({static_cast<int64_t>(d.tokens.size()), longest}, DType::i32);   // PAD past each length
  for (size_t n = 0; n < d.tokens.size(); ++n)
    std::copy(d.tokens[n].begin(), d.tokens[n].end(), tokens.idata() + static_cast<int64_t>(n) * longest);
  file.write("check/mask_predict_tokens", tokens);
  file.set_attr("/", "check_iterations", iterations);
  file.commit();
  std::printf("export=%s params=%lld check_loss=%.9g check_tokens=%lld mask_predict_length=%lld\n", path.c_str(),
              static_cast<long long>(count_params(model)), s.loss_sum / static_cast<double>(s.tokens),
              static_cast<long long>(s.tokens), static_cast<long long>(longest));
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"mode", "train"},
                         {"arch", "encdec"},
                         {"threads", "1"},
                         {"adapt", "0"},
                         {"running", "0"},
                         {"limit", "1"},
                         {"steps", "5"},
                         {"warmup", "2"},
                         {"batch", "64"},
                         {"length", "24"},
                         {"new-tokens", "24"},
                         {"iterations", "10"},
                         {"length-beam", "1"},
                         {"export", ""},
                         {"vocab", "8000"},
                         {"d-model", "256"},
                         {"heads", "4"},
                         {"d-ff", "1024"},
                         {"layers", "3"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  set_thread_adaptation(args.integer("adapt") != 0);   // the tools' default: fewer threads beside busy neighbours
  if (args.integer("running") > 0) set_running_threads(static_cast<int>(args.integer("running")));   // as the governor
  const std::string mode = args.str("mode");
  const int64_t B = args.integer("batch"), L = args.integer("length"), new_tokens = args.integer("new-tokens");
  transformer::TransformerConfig c;
  c.arch = transformer::arch_from_string(args.str("arch"));
  if (c.arch != transformer::TransformerArch::encdec && c.arch != transformer::TransformerArch::cmlm) {
    std::fprintf(stderr, "perf_transformer: --arch must be encdec or cmlm, got '%s'\n", args.str("arch").c_str());
    return 2;
  }
  const bool cmlm = c.arch == transformer::TransformerArch::cmlm;
  c.src_vocab = c.tgt_vocab = args.integer("vocab");
  c.d_model = args.integer("d-model");
  c.heads = args.integer("heads");
  c.d_ff = args.integer("d-ff");
  c.enc_layers = c.dec_layers = args.integer("layers");
  c.dropout = 0.1f;
  c.label_smoothing = 0.1f;
  Rng init(1);
  transformer::Transformer model(c, init);
  if (cmlm) force_length_ranking(model, (L - 1) - L);   // y = the target without EOS: |y| - |x| = -1
  const data::TokenBatch batch = perf::make_batch(B, L, c.tgt_vocab);
  const int64_t params = count_params(model);
  if (!args.str("export").empty()) {
    if (!cmlm) {
      std::fprintf(stderr, "perf_transformer: --export is for --arch cmlm\n");
      return 2;
    }
    write_export(args.str("export"), model, batch);
    return 0;
  }

  if (mode == "train") {
    const ParamList plist = model.params();
    optim::Adam adam({.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f});
    Rng dropout(2), masking(3);
    int64_t t = 0, tokens = 0;
    auto step = [&] {
      zero_grads(plist);
      if (cmlm) {
        const transformer::CmlmBatch masked = transformer::cmlm_mask(batch, masking, model.mask_token_id());
        model.train_step(masked, dropout);
        tokens = sum(masked.tgt_len);   // y's tokens, masked or not
      } else {
        tokens = model.train_step(batch, dropout).tokens;
      }
      adam.step(plist, ++t);
      adapt_threads();
    };
    const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), step);
    flops::reset();
    step();
    perf::print_result("train", static_cast<double>(tokens), times, params, train_gemms(c, B, L),
                       2.0 * static_cast<double>(flops::count()), args.integer("limit") != 0);
    return 0;
  }
  if (mode == "decode" && cmlm) {
    const transformer::MaskPredictOptions o{.iterations = args.integer("iterations"),
                                            .length_beam = args.integer("length-beam")};
    int64_t tokens = 0;
    auto run = [&] {
      const decode::Decoded r = transformer::mask_predict(model, batch.src, batch.src_len, o);
      tokens = 0;
      for (const auto& s : r.tokens) tokens += static_cast<int64_t>(s.size());
    };
    const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), run);
    flops::reset();
    run();
    // The candidates' lengths (force_length_ranking): L - 1 + 0, -1, +1, -2, ...; the longest of them.
    const int64_t longest = L - 1 + (o.length_beam - 1) / 2;
    std::string label = "mask-predict-T" + std::to_string(o.iterations);
    if (o.length_beam > 1) label += "-L" + std::to_string(o.length_beam);
    perf::print_result(label.c_str(), static_cast<double>(tokens), times, params,
                       mask_predict_gemms(c, B, L, B * o.length_beam, longest, o.iterations),
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
    perf::print_result("decode", static_cast<double>(tokens), times, params, greedy_gemms(c, B, L, new_tokens),
                       2.0 * static_cast<double>(flops::count()), args.integer("limit") != 0);
    return 0;
  }
  std::fprintf(stderr, "perf_transformer: --mode must be train or decode, got '%s'\n", mode.c_str());
  return 2;
}
