// Whole-model speed of the Show-Attend-and-Tell captioner (caption::Captioner, issue 15 "Speed"),
// the attnlab side of experiments/perf/caption (run.sh puts it beside the same model in PyTorch,
// torch_caption.py): full training steps as attn-caption train takes them (zero grads,
// Captioner::train_step, clip the gradient's global norm at 5, Adam at lr 1e-3), in images/s.
//
// Model: attn-caption train's defaults on 1 x 32 x 160 images (attn-data mnist-strips'
// default size): encoder conv32x3,pool2,conv64x3,pool2 (an 8 x 40 grid of 64-wide annotations),
// embedding 64, LSTM 128, attention 64, the gate, alpha_c 1, no dropout; vocabulary 14 (PAD,
// BOS, EOS, UNK and the ten digit words).
//
// Data: a pool of --images strips, made here (seed --seed) unless --data names a data set of
// attn-data mnist-strips (its /train split's first --images rows): k = 1..5 digits side by side,
// each a digit's glyph of a few thick strokes (one fixed random glyph per digit, moved a few
// pixels each time, its ink graded pixel by pixel) at a random vertical offset, with gaps of
// 0..4 pixels; captioned with the digits' words and EOS. (The graded ink matters to the
// same-model check: with flat strokes the parameters after 20 steps differed 4 times more,
// most likely max-pooling windows whose maxima tie in exact arithmetic and which the two
// sides' rounding breaks differently.) One repetition trains on the pool in
// consecutive batches of --batch, each gathered as the trainer gathers its batches
// (caption::gather_caption_batch: the captions cut to the batch's longest); the model keeps
// training from one repetition to the next.
//
// --export FILE writes what the PyTorch twin needs to run the same model on the same data, and
// to check that it is the same model, then exits without timing:
//   /pool/images, /pool/tgt, /pool/tgt_len   the pool ([P, 1, H, W] float32, [P, T], [P] int32)
//   /params/<name>        the initial parameters, attnlab's names and layouts (families/caption/model.hpp)
//   /check/grads/<name>   the gradients of one train_step on the pool's first --batch images from
//                         those parameters; root attribute check_loss (the mean loss L the
//                         gradient is of), check_batch
//   /check/after/<name>   the parameters after --check-steps full training steps (clipping and
//                         Adam included) from the same start on the pool's consecutive batches
//   root attributes: the model config (CaptionerConfig::to_attrs), lr, clip, check_steps, seed
//
// Otherwise prints one line of key=value pairs:
//   impl=attnlab mode=train-b<B> threads=1 batch=B images_per_s=... ms_per_image=... median_s=...
//   min_s=... max_s=... cpu_images_per_s=... params=... images=... gflop_per_image=...
//   counted_per_listed=... sgemm_gflops=... limit_images_per_s=... of_limit=...
// (seconds per repetition; the rates over the median time, cpu_ over the process's CPU time;
// the limit is plain sgemm on the model's list of products, perf_util.hpp). The list gives each
// convolution's multiply-adds as its im2col GEMMs; conv1 runs as Winograd's F(2 x 2, 3 x 3),
// 2.25 times fewer, so attnlab can pass that limit, and counted_per_listed (about 0.5) is the
// share of the listed multiply-adds the step does. With --parts 1,
// then one line per part of the step timed alone on the pool's first batch with the model's
// weights (--steps repetitions of as many calls as the pool has batches, each after an untimed
// one; a part with products alternates them with its sgemm yardstick, time_part below):
//   part=conv<k>       the forward and backward of encoder convolution k as the model runs them,
//                      against the im2col GEMMs of its multiply-adds (forward, dW, and dcol
//                      but for conv0, whose input needs no gradient); a convolution followed by
//                      2 x 2 pooling runs, as in the model, as ops::conv2d_max_pool2 (conv0+pool:
//                      direct; conv1+pool: Winograd, which passes 1, then max_pool2d)
//   part=encoder-rest  the encoder's ReLUs, the max poolings not fused with a convolution, and
//                      the permutation to annotations
//   part=lstm          the decoder's LSTM cell, T steps of nn::Rnn::step (h W_hh^T plus the
//                      gates) and T of step_backward (dh, dW_hh per step) on B rows
// each with seconds per batch (median), its share of the whole step's time, GFLOP/s on its
// products, their sgemm rate and the fraction of it reached (of_limit, the median of the
// repetitions' ratios to the yardstick run after each).
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/families/caption/caption_data.hpp"
#include "attn/families/caption/model.hpp"
#include "attn/families/caption/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/rnn.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/conv.hpp"
#include "attn/ops/conv_pool.hpp"
#include "attn/ops/pool.hpp"
#include "attn/ops/rows.hpp"
#include "attn/ops/shape_ops.hpp"
#include "attn/optim/adam.hpp"
#include "attn/optim/clip.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

// attn-caption train's defaults (apps/caption/train_verb.cpp).
constexpr float kLr = 1e-3f;
constexpr double kClip = 5.0;
constexpr int64_t kVocab = 14;          // PAD, BOS, EOS, UNK, "zero" .. "nine"
constexpr int64_t kDigitSide = 28;      // MNIST's
constexpr int64_t kMaxDigits = 5, kMaxGap = 4;

// One fixed glyph per digit: 4 thick strokes between random points of a 28 x 28 cell.
std::vector<std::vector<float>> make_glyphs(Rng& rng) {
  std::vector<std::vector<float>> glyphs(10, std::vector<float>(kDigitSide * kDigitSide, 0.0f));
  for (auto& g : glyphs)
    for (int s = 0; s < 4; ++s) {
      const float y0 = rng.uniform(5, 23), x0 = rng.uniform(6, 22), y1 = rng.uniform(5, 23), x1 = rng.uniform(6, 22);
      for (int k = 0; k <= 40; ++k) {
        const float f = static_cast<float>(k) / 40.0f;
        const int64_t y = std::lround(y0 + f * (y1 - y0)), x = std::lround(x0 + f * (x1 - x0));
        for (int64_t dy = -1; dy <= 1; ++dy)
          for (int64_t dx = -1; dx <= 1; ++dx) g[(y + dy) * kDigitSide + x + dx] = dy == 0 && dx == 0 ? 1.0f : 0.7f;
      }
    }
  return glyphs;
}

// P strips of 1..5 digits, [P, 1, H, W], captioned with the digits' words and EOS.
caption::CaptionSplit make_pool(int64_t P, int64_t H, int64_t W, Rng& rng) {
  const std::vector<std::vector<float>> glyphs = make_glyphs(rng);
  caption::CaptionSplit s;
  s.name = "train";
  Tensor images({P, 1, H, W}), tgt({P, kMaxDigits + 1}, DType::i32);
  s.tgt_len = Tensor({P}, DType::i32);
  for (int64_t n = 0; n < P; ++n) {
    const int64_t k = 1 + rng.uniform_int(kMaxDigits);
    float* img = images.data() + n * H * W;
    int64_t x = rng.uniform_int(W - k * (kDigitSide + kMaxGap) + 1);
    for (int64_t d = 0; d < k; ++d) {
      const int64_t digit = rng.uniform_int(10), y = rng.uniform_int(H - kDigitSide + 1);
      const int64_t jy = rng.uniform_int(3) - 1, jx = rng.uniform_int(3) - 1;   // the glyph moved
      const std::vector<float>& g = glyphs[static_cast<size_t>(digit)];
      for (int64_t r = 1; r + 1 < kDigitSide; ++r)
        for (int64_t c = 1; c + 1 < kDigitSide; ++c) {
          const float ink = g[(r + jy) * kDigitSide + c + jx];   // graded, as MNIST's anti-aliased strokes
          if (ink > 0.0f) img[(y + r) * W + x + c] = ink * rng.uniform(0.75f, 1.0f);
        }
      tgt.idata()[n * (kMaxDigits + 1) + d] = static_cast<int32_t>(4 + digit);
      x += kDigitSide + rng.uniform_int(kMaxGap + 1);
    }
    tgt.idata()[n * (kMaxDigits + 1) + k] = data::kEos;
    s.tgt_len.idata()[n] = static_cast<int32_t>(k + 1);
  }
  s.images = images;
  s.tgt = tgt;
  return s;
}

// The first P rows of a data set's /train split (attn-data mnist-strips); sets its vocabulary's size.
caption::CaptionSplit read_pool(const std::string& path, int64_t P, int64_t& vocab) {
  const io::File file = io::File::open_read(path);
  vocab = caption::read_caption_vocab(file).size();
  const caption::CaptionSplit train = caption::read_caption_split(file, "train", vocab);
  if (train.size() < P) throw ConfigError(path + ": /train has " + std::to_string(train.size()) + " images, fewer than --images");
  std::vector<int64_t> rows(static_cast<size_t>(P));
  for (int64_t i = 0; i < P; ++i) rows[static_cast<size_t>(i)] = i;
  const caption::CaptionBatch b = caption::gather_caption_batch(train, rows);
  caption::CaptionSplit s;
  s.name = "train";
  s.images = b.images;
  s.tgt = b.tgt;
  s.tgt_len = b.tgt_len;
  return s;
}

std::vector<caption::CaptionBatch> make_batches(const caption::CaptionSplit& pool, int64_t B) {
  std::vector<caption::CaptionBatch> batches;
  for (int64_t first = 0; first < pool.size(); first += B) {
    std::vector<int64_t> rows;
    for (int64_t i = first; i < first + B; ++i) rows.push_back(i);
    batches.push_back(caption::gather_caption_batch(pool, rows));
  }
  return batches;
}

// One encoder convolution at a batch's shapes: B images of C x IH x IW to O channels, k x k.
struct ConvShape {
  int64_t B, C, IH, IW, O, k;
  int64_t positions() const { return IH * IW; }   // stride 1, padding k / 2, odd k
  int64_t window() const { return C * k * k; }
  // The op's products: forward, dW and, with the input's gradient, dcol.
  bench::GemmList gemms(bool input_grad = true) const {
    bench::GemmList g{{O, B * positions(), window()}, {O, window(), B * positions()}};
    if (input_grad) g.push_back({window(), B * positions(), O});
    return g;
  }
};

std::vector<ConvShape> conv_shapes(const caption::CaptionerConfig& c, int64_t B) {
  std::vector<ConvShape> out;
  int64_t C = c.channels, H = c.height, W = c.width;
  for (const caption::ConvEncoderLayer& l : caption::parse_encoder(c.encoder)) {
    if (l.kind == caption::ConvEncoderLayer::conv) {
      out.push_back({B, C, H, W, l.channels, l.size});
      C = l.channels;
    } else {
      H /= l.size;
      W /= l.size;
    }
  }
  return out;
}

// The LSTM's recurrent products over T steps of B rows (hidden Dd, 4 Dd gates), as nn::Rnn
// does them: per step h W_hh^T, dh = dg W_hh and dW_hh += dg^T h.
void add_recurrence(bench::GemmList& g, int64_t T, int64_t B, int64_t Dd) {
  for (int64_t t = 0; t < T; ++t) {
    g.push_back({B, 4 * Dd, Dd});
    g.push_back({B, Dd, 4 * Dd});
    g.push_back({4 * Dd, Dd, B});
  }
}

// The model's useful products for one training step of B images and T steps (conv0's dcol
// left out: the images need no gradient; PyTorch skips it).
bench::GemmList model_gemms(const caption::CaptionerConfig& c, int64_t B, int64_t T) {
  const caption::CaptionerConfig::Grid grid = c.grid();
  const int64_t L = grid.locations(), D = grid.D, Dd = c.hidden, A = c.attention_dim, m = c.embed_dim;
  const int64_t G = 4 * Dd, V = c.vocab, N = T * B;
  bench::GemmList g;
  const std::vector<ConvShape> convs = conv_shapes(c, B);
  for (size_t k = 0; k < convs.size(); ++k) {
    const bench::GemmList cg = convs[k].gemms(/*input_grad=*/k > 0);
    g.insert(g.end(), cg.begin(), cg.end());
  }
  perf::add_linear(g, B, D, Dd, true);          // init_h
  perf::add_linear(g, B, D, Dd, true);          // init_c
  perf::add_linear(g, B * L, D, A, true);       // U a_i, once
  perf::add_linear(g, N, m, G, true);           // the embedding part of the cell input, all steps
  for (int64_t t = 0; t < T; ++t) {
    perf::add_linear(g, B, Dd, A, true);        // W h_{t-1}
    g.push_back({B * L, 1, A});                 // v . tanh(...)
    g.push_back({1, A, B * L});                 // dv
    g.push_back({1, D, L, B});                  // z = alpha a
    g.push_back({1, L, D, B});                  // dalpha = dz a^T
    g.push_back({L, D, 1, B});                  // da += alpha^T dz
    perf::add_linear(g, B, Dd, 1, true);        // the gate
    g.push_back({B, G, D});                     // the context's part of the cell input
    g.push_back({B, D, G});                     // its dz
  }
  g.push_back({G, D, N});                       // its dW, once
  add_recurrence(g, T, B, Dd);
  perf::add_linear(g, N, Dd + D, m, true);      // deep output
  perf::add_linear(g, N, m, V, true);           // output layer
  return g;
}

// One full training step: zero grads, forward and backward, clip, Adam.
void train_one(caption::Captioner& model, const ParamList& params, const caption::CaptionBatch& batch,
               optim::Adam& adam, Rng& rng, int64_t t) {
  zero_grads(params);
  model.train_step(batch, rng);
  optim::clip_grad_norm(params, kClip);
  adam.step(params, t);
}

void write_export(const std::string& path, const caption::CaptionSplit& pool,
                  const std::vector<caption::CaptionBatch>& batches, caption::Captioner& model, int64_t steps,
                  uint64_t seed) {
  io::File file = io::File::create(path);
  file.write("pool/images", pool.images.all());
  file.write("pool/tgt", pool.tgt.all());
  file.write("pool/tgt_len", pool.tgt_len);
  const ParamList params = model.params();
  for (const Param* p : params) file.write("params/" + p->name, p->value);
  Rng rng(seed);
  zero_grads(params);
  const caption::CaptionStats s = model.train_step(batches.front(), rng);
  for (const Param* p : params) file.write("check/grads/" + p->name, p->grad);
  const double loss = s.loss_sum / static_cast<double>(s.tokens);
  for (const auto& [key, value] : model.config().to_attrs()) file.set_attr("/", key, value);
  file.set_attr("/", "check_loss", loss);
  file.set_attr("/", "check_batch", s.sequences);
  file.set_attr("/", "seed", static_cast<int64_t>(seed));
  file.set_attr("/", "lr", static_cast<double>(kLr));
  file.set_attr("/", "clip", kClip);
  optim::Adam adam({.lr = kLr});
  for (int64_t t = 1; t <= steps; ++t)
    train_one(model, params, batches[static_cast<size_t>(t - 1) % batches.size()], adam, rng, t);
  for (const Param* p : params) file.write("check/after/" + p->name, p->value);
  file.set_attr("/", "check_steps", steps);
  file.commit();
  std::printf("export=%s images=%lld check_batch=%lld check_loss=%.9g check_tokens=%lld\n", path.c_str(),
              static_cast<long long>(pool.size()), static_cast<long long>(s.sequences), loss,
              static_cast<long long>(s.tokens));
}

// Seconds per batch of `run` (one call per batch), the median of `reps` passes over n_batches
// after one untimed pass.
template <class Run>
double seconds_per_batch(int64_t reps, int64_t n_batches, Run&& run) {
  const perf::Times t = perf::time_reps(1, reps, [&] {
    for (int64_t i = 0; i < n_batches; ++i) run();
  });
  return perf::median(t.wall) / static_cast<double>(n_batches);
}

// One part's line; limit_seconds and of_limit are 0 for a part without products.
void print_part(const char* part, double seconds, double step_seconds, const bench::GemmList& gemms,
                double limit_seconds, double of_limit) {
  const double flop = bench::gemm_flop(gemms);
  std::printf("part=%s impl=attnlab threads=%d ms_per_batch=%.3f share=%.3f gflops=%.1f sgemm_gflops=%.1f "
              "of_limit=%.3f\n", part, num_threads(), 1e3 * seconds, seconds / step_seconds,
              flop > 0 ? 1e-9 * flop / seconds : 0.0, limit_seconds > 0 ? 1e-9 * flop / limit_seconds : 0.0,
              of_limit);
  std::fflush(stdout);
}

// A part with products, timed against the sgemm yardstick of its products (bench_util.hpp),
// the two interleaved as in bench_util's time_op: each of `reps` passes over n_batches calls of
// `run` is followed by one run of the yardstick, so that both are measured under the same load
// and clock. A shared machine's speed can drift over minutes, and a limit measured after the
// part moved of_limit with it from run to run (experiments/perf/caption, "A recurrent step in one
// parallel region, and parts timed beside their yardstick"). Prints the medians of seconds per
// batch and of the yardstick's seconds, and of_limit as the median of the pairs' ratios.
template <class Run>
void time_part(const char* part, int64_t reps, int64_t n_batches, double step_seconds, const bench::GemmList& gemms,
               Run&& run) {
  bench::Yardstick yardstick(gemms);
  std::vector<double> seconds, limits, ratios;
  for (int64_t r = 0; r < reps; ++r) {
    // Each side runs once untimed first, so that neither is timed on operands the other has
    // pushed out of the caches.
    seconds.push_back(seconds_per_batch(1, n_batches, run));
    yardstick.run();
    limits.push_back(yardstick.run().wall);
    ratios.push_back(limits.back() / seconds.back());
  }
  print_part(part, bench::median(seconds), step_seconds, gemms, bench::median(limits), bench::median(ratios));
}

// The parts (see the top) timed alone on the pool's first batch (B images, T steps) with the
// model's current weights, so that the ReLUs and poolings see the activations they see in
// training (their branches depend on the data); the gradients are random.
void time_parts(caption::Captioner& model, const caption::CaptionBatch& batch, int64_t reps, int64_t n_batches,
                double step_seconds) {
  const caption::CaptionerConfig& c = model.config();
  const int64_t B = batch.images.dim(0), T = batch.tgt.dim(1);
  std::map<std::string, const Param*> params;
  for (const Param* p : model.params()) params[p->name] = p;
  Rng rng(7);
  Tensor x = batch.images;
  double rest = 0.0;
  int64_t k = 0;
  const std::vector<caption::ConvEncoderLayer> layers = caption::parse_encoder(c.encoder);
  const auto relu = [&](const Tensor& y) {   // timed into `rest`; returns relu(y)
    const Tensor dy = rand_uniform(y.shape(), rng, -1.0f, 1.0f);
    rest += seconds_per_batch(reps, n_batches, [&] {
      ops::ReluCache cache;
      ops::relu_forward(y, &cache);
      ops::relu_backward(dy, cache);
    });
    return ops::relu_forward(y, nullptr);
  };
  for (size_t i = 0; i < layers.size(); ++i) {
    const caption::ConvEncoderLayer& l = layers[i];
    if (l.kind == caption::ConvEncoderLayer::pool) {
      ops::MaxPoolCache pc;
      Tensor y = ops::max_pool2d_forward(x, {.kernel = l.size}, &pc);
      const Tensor dy = rand_uniform(y.shape(), rng, -1.0f, 1.0f);
      rest += seconds_per_batch(reps, n_batches, [&] {
        ops::MaxPoolCache cache;
        ops::max_pool2d_forward(x, {.kernel = l.size}, &cache);
        ops::max_pool2d_backward(dy, cache);
      });
      x = i > 0 && layers[i - 1].kind == caption::ConvEncoderLayer::conv ? relu(y) : y;
      continue;
    }
    const std::string name = "encoder/conv" + std::to_string(k);
    const Tensor W = params.at(name + "/W")->value, b = params.at(name + "/b")->value;
    Tensor dW = zeros_like(W), db = zeros_like(b);
    const ops::ConvOptions o{.padding = l.size / 2};
    const bool input_grad = k > 0;   // as the model: the images need no gradient
    const ConvShape shape{B, x.dim(1), x.dim(2), x.dim(3), l.channels, l.size};
    // As Captioner::encode: a convolution with 2 x 2 pooling next runs as one op, the ReLU after both.
    if (i + 1 < layers.size() && layers[i + 1].kind == caption::ConvEncoderLayer::pool && layers[i + 1].size == 2) {
      const Tensor y = ops::conv2d_max_pool2_forward(x, W, b, o, nullptr);
      const Tensor dy = rand_uniform(y.shape(), rng, -1.0f, 1.0f);
      time_part(("conv" + std::to_string(k++) + "+pool").c_str(), reps, n_batches, step_seconds,
                shape.gemms(input_grad), [&] {
                  ops::ConvPoolCache cache;
                  ops::conv2d_max_pool2_forward(x, W, b, o, &cache);
                  ops::conv2d_max_pool2_backward(dy, W, cache, dW, db, input_grad);
                });
      x = relu(y);
      ++i;   // the pooling is done
      continue;
    }
    ops::ConvCache cc;
    const Tensor y = ops::conv2d_forward(x, W, b, o, &cc);
    const Tensor dy = rand_uniform(y.shape(), rng, -1.0f, 1.0f);
    time_part(("conv" + std::to_string(k++)).c_str(), reps, n_batches, step_seconds, shape.gemms(input_grad), [&] {
      ops::ConvCache cache;
      ops::conv2d_forward(x, W, b, o, &cache);
      ops::conv2d_backward(dy, W, cache, dW, db, input_grad);
    });
    x = i + 1 < layers.size() && layers[i + 1].kind == caption::ConvEncoderLayer::pool ? y : relu(y);
  }
  const Tensor dx = rand_uniform({x.dim(0), x.dim(2), x.dim(3), x.dim(1)}, rng, -1.0f, 1.0f);
  rest += seconds_per_batch(reps, n_batches, [&] {
    ops::PermuteCache cache;
    ops::permute_forward(x, {0, 2, 3, 1}, &cache);
    ops::permute_backward(dx, cache);
  });
  print_part("encoder-rest", rest, step_seconds, {}, 0.0, 0.0);

  // The LSTM: T steps forward from a random state and input projection, then T backward.
  const int64_t Dd = c.hidden, D = c.grid().D;
  nn::Rnn rnn(nn::RnnCell::lstm, c.embed_dim + D, Dd, "rnn", rng);
  std::vector<Tensor> gx, dh;   // per step: the input projection, the gradient from above
  for (int64_t t = 0; t < T; ++t) {
    gx.push_back(rand_uniform({B, 4 * Dd}, rng, -1.0f, 1.0f));
    dh.push_back(rand_uniform({B, Dd}, rng, -0.1f, 0.1f));
  }
  const Tensor h0 = rand_uniform({B, Dd}, rng, -0.5f, 0.5f);
  std::vector<nn::RnnStepCache> caches(static_cast<size_t>(T));
  bench::GemmList rg;
  add_recurrence(rg, T, B, Dd);
  time_part("lstm", reps, n_batches, step_seconds, rg, [&] {
    nn::RnnState s{h0, Tensor({B, Dd})};
    for (int64_t t = 0; t < T; ++t) s = rnn.step(gx[static_cast<size_t>(t)], s, &caches[static_cast<size_t>(t)]);
    nn::RnnState d{Tensor({B, Dd}), Tensor({B, Dd})};
    for (int64_t t = T; t-- > 0;) {
      ops::add_into(d.h.data(), dh[static_cast<size_t>(t)].data(), B * Dd);
      nn::RnnState prev;
      rnn.step_backward(d, caches[static_cast<size_t>(t)], prev);
      d = prev;
    }
  });
}

int run(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"data", ""}, {"threads", "1"}, {"batch", "32"}, {"images", "256"}, {"steps", "5"},
                         {"warmup", "1"}, {"seed", "1"}, {"export", ""}, {"check-steps", "20"}, {"height", "32"},
                         {"width", "160"}, {"limit", "1"}, {"parts", "0"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), P = args.integer("images");
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  if (B < 1 || P < B || P % B != 0) {
    std::fprintf(stderr, "perf_caption: --images (%lld) must be a positive multiple of --batch (%lld)\n",
                 static_cast<long long>(P), static_cast<long long>(B));
    return 2;
  }
  Rng data_rng(seed);
  int64_t vocab = kVocab;
  const caption::CaptionSplit pool = args.str("data").empty()
                                         ? make_pool(P, args.integer("height"), args.integer("width"), data_rng)
                                         : read_pool(args.str("data"), P, vocab);
  const std::vector<caption::CaptionBatch> batches = make_batches(pool, B);

  caption::CaptionerConfig c;   // the defaults are attn-caption train's
  c.vocab = vocab;
  c.channels = pool.images.dim(1);
  c.height = pool.images.dim(2);
  c.width = pool.images.dim(3);
  Rng init(seed);
  caption::Captioner model(c, init);
  const ParamList plist = model.params();
  int64_t params = 0;
  for (const Param* p : plist) params += p->value.numel();
  if (!args.str("export").empty()) {
    write_export(args.str("export"), pool, batches, model, args.integer("check-steps"), seed);
    return 0;
  }

  optim::Adam adam({.lr = kLr});
  Rng rng(seed);
  int64_t t = 0;
  auto repetition = [&] {
    for (const caption::CaptionBatch& batch : batches) train_one(model, plist, batch, adam, rng, ++t);
  };
  const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), repetition);
  flops::reset();
  repetition();
  const double counted = 2.0 * static_cast<double>(flops::count());
  bench::GemmList gemms;
  for (const caption::CaptionBatch& batch : batches) {
    const bench::GemmList g = model_gemms(c, B, batch.tgt.dim(1));
    gemms.insert(gemms.end(), g.begin(), g.end());
  }
  const double med = perf::median(times.wall), n = static_cast<double>(P), listed = bench::gemm_flop(gemms);
  const double limit_s = args.integer("limit") != 0 ? perf::sgemm_seconds(gemms) : 0.0;
  std::printf(
      "impl=attnlab mode=train-b%lld threads=%d batch=%lld images_per_s=%.1f ms_per_image=%.4f median_s=%.4f "
      "min_s=%.4f max_s=%.4f cpu_images_per_s=%.1f params=%lld images=%lld gflop_per_image=%.5f "
      "counted_per_listed=%.3f sgemm_gflops=%.1f limit_images_per_s=%.1f of_limit=%.3f\n",
      static_cast<long long>(B), num_threads(), static_cast<long long>(B), n / med, 1e3 * med / n, med,
      times.wall.front(), times.wall.back(), n / perf::median(times.cpu), static_cast<long long>(params),
      static_cast<long long>(P), 1e-9 * listed / n, counted / listed, limit_s > 0 ? 1e-9 * listed / limit_s : 0.0,
      limit_s > 0 ? n / limit_s : 0.0, limit_s / med);
  std::fflush(stdout);
  if (args.integer("parts") != 0) {
    time_parts(model, batches.front(), args.integer("steps"), static_cast<int64_t>(batches.size()),
               med / static_cast<double>(batches.size()));
  }
  return 0;
}

}  // namespace

// A bad --data file (missing, wrong layout) is a message and exit 3, not an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const attn::Error& e) {
    std::fprintf(stderr, "perf_caption: %s\n", e.what());
    return 3;
  }
}
