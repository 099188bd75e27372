// Internal to families/seq2seq: the caches of a forward pass and the encoder functions shared by
// the training code (seq2seq.cpp) and step-by-step decoding (seq2seq_step.cpp); the decoder step
// is nn::AttentionDecoder's. Not installed.
#pragma once
#include <vector>

#include "attn/families/seq2seq/model.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/shape_ops.hpp"

namespace attn::seq2seq {

struct Seq2SeqImpl {
  // ---- encoder -------------------------------------------------------------------------------
  // One direction of one layer, its input already in processing order (reversed for bwd).
  struct DirCache {
    nn::RnnLayerCache layer;                      // plain RNN: the layer op's cache
    Tensor x;                                 // self-attention: [S, B, I] the input
    Tensor ctx;                               // [S, B, H] h~_t (row 0 zeros)
    Tensor keys;                              // [B, S, H] h_t, batch-major (the attention memory)
    nn::AttentionMemory memory;
    std::vector<nn::RnnStepCache> steps;
    std::vector<nn::AttentionStepCache> attn;
  };
  struct LayerCache {
    DirCache dir[2];
    ops::DropoutCache drop;                   // on the layer's input (layers > 0)
    ops::ConcatCache concat;
  };

  // The source side of a batch as the decoder sees it.
  struct Encoded {
    Tensor memory;                            // [B, S, Dv] h_j
    Tensor src_len;                           // int32 [B]
    nn::AttentionMemory attn;                 // prepared for the decoder's attention (nn::AttentionDecoder::prepare)
    Tensor s0;                                // [B, Dd] the decoder's initial h
  };

  struct EncoderCache {
    ops::EmbeddingCache embed;
    std::vector<LayerCache> layers;
    ops::PermuteCache to_batch;               // [S, B, Dv] -> [B, S, Dv]
    ops::LinearCache bridge;
    ops::TanhCache bridge_tanh;
  };

  struct Run {
    int64_t B = 0, S = 0, T = 0;
    EncoderCache encoder;
    Encoded enc;
    Tensor ids_in;                            // int32 [T, B] decoder inputs (BOS, y_0, ...)
    Tensor targets;                           // int32 [T*B] (-1: not counted)
    Tensor emb;                               // [T*B, E]
    ops::EmbeddingCache tgt_embed;
    Tensor gx;                                // [T*B, G] embedding part of the input projection
    Tensor O;                                 // [T*B, Do] o_t (the decoder's part, then e_t for bahdanau)
    nn::AttentionDecoderCache dec;            // the decoder's caches of all T steps
    ops::DropoutCache out_drop;
    ops::LinearCache out;
    Tensor logits;                            // [T*B, V]; train_step overwrites it with dlogits
  };

  static Encoded encode(const Seq2Seq& m, const Tensor& src, const Tensor& src_len, bool training, Rng& rng,
                        EncoderCache* cache);
  // dmemory: [B, S, Dv] (consumed), ds0: [B, Dd].
  static void encode_backward(Seq2Seq& m, const Encoded& enc, Tensor dmemory, const Tensor& ds0,
                              EncoderCache& cache);
  // Checks src [B, S] / src_len [B] (ids in range, 1 <= len <= S).
  static void check_source(const Seq2Seq& m, const Tensor& src, const Tensor& src_len, const std::string& label);
};

}  // namespace attn::seq2seq
