// The captioner (families/caption/model.hpp) on image-captioning data sets (families/caption/caption_data.hpp,
// written by `attn-data mnist-strips` and `attn-data shapes`): its TrainTask, evaluation,
// captioning with the attention behind every word, and model files. attn-caption's verbs are
// thin front ends over these functions.
//
// What is measured:
//   loss                 the training objective per word: cross-entropy plus lambda times the
//                        doubly stochastic penalty plus gamma times the attention's entropy,
//                        over the counted words (EOS included)
//   perplexity           exp(cross-entropy per word), without the penalties
//   token accuracy       words whose teacher-forced argmax is right
//   sequence accuracy    captions all of whose words (EOS included) are right; teacher forced,
//                        that is exactly the captions greedy search reproduces; of generated
//                        captions (greedy or beam), those equal to the reference
//   BLEU-1..4            of the generated captions against the references, as word ids without EOS
//                        (metrics::bleu_n)
//   attention correctness  of the words that name an object (the split's /boxes): the fraction
//                        whose attention peak lies in the object's box, the peak being the
//                        location of the largest weight and "in the box" meaning the centre of
//                        that location's cell of the h x w grid over the H x W image. Teacher
//                        forced, on the reference captions, so every named word is scored once.
// Work is counted in images.
//
// A model file is a checkpoint of kind "captioner" (io/checkpoint.hpp, with the trainer's
// /state and /metrics) plus /vocab/tgt, the vocabulary of the data set it was trained on, and
// with batch normalisation /buffers/encoder/bn<k>/{running_mean, running_var}.
// A captions file (format "attnlab/output", kind "captions") holds, for the N images of a split
// in data-set order:
//   /predictions        int32 [N, Tmax]   the generated word ids, without BOS and EOS, padded 0
//   /predictions_len    int32 [N]
//   /predictions_text   string [N]        the words joined by spaces
//   /scores             float32 [N]       log p (beam: divided by |y|^alpha)
//   /attention          float32 [N, Tmax, h, w]  the weights behind every generated word over the
//                                         annotation grid; zeros past a caption's words
//   /images             float32 [N, C, H, W]     the split's images, so the file stands alone
//   /tgt, /tgt_len      the split's reference captions; /boxes when it has them
//   /vocab/tgt          the vocabulary
//   /metrics            attributes images, sequence_accuracy, bleu1..bleu4
// `attn-plot overlay CAPS --index I --image /images --attention /attention --word-ids
// /predictions --word-vocab /vocab/tgt --out looked.png` draws image I with one panel per word.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/caption/caption_data.hpp"
#include "attn/families/caption/decode.hpp"
#include "attn/families/caption/model.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/trainer.hpp"

namespace attn::caption {

// Names of the task's BatchStats sums and the metrics (see above).
inline const std::vector<std::string> kCaptionSums = {"nll", "correct", "sequences_correct", "penalty"};
train::BatchStats to_stats(const CaptionStats& s);
double caption_perplexity(const train::BatchStats& s);   // NaN when nothing was counted
double caption_token_accuracy(const train::BatchStats& s);
double caption_sequence_accuracy(const train::BatchStats& s);   // over s.units captions

// The rows `index` of a split as a batch, captions cut to the longest.
CaptionBatch gather_caption_batch(const CaptionSplit& split, std::span<const int64_t> index);

// Throws FormatError naming `file` unless the data set fits the model: its vocabulary is the
// model's size (and, given the model's words, the same words) and its images the model's C, H, W.
void check_caption_data(const CaptionerConfig& config, const data::Vocab& data_vocab, const CaptionSplit& split,
                        const std::string& file, const data::Vocab* model_vocab = nullptr);

// How a captioner is trained beyond its config.
struct CaptionTraining {
  // > 0: the entropy penalty (alpha_entropy) is on for this many epochs and off after them
  // (Captioner::set_entropy_penalty), so that attention learns to be sharp first and the
  // reading is then trained on the words' loss alone; 0: on throughout.
  int64_t alpha_entropy_epochs = 0;
};

// The trainer's view of a captioner: kind "captioner", config = model.config().to_attrs(), unit
// images, the metrics above, lengths = tgt_len. `vocab` is written to every saved file. train
// and valid must fit the model; they, the model and the vocabulary must outlive the task; valid
// may be null. Whether the entropy penalty is still on is the /state attribute entropy_penalty
// (0/1) of every file saved, restored on resume (the same bits) and by load_captioner.
train::TrainTask caption_task(Captioner& model, const CaptionSplit& train, const CaptionSplit* valid,
                              const data::Vocab& vocab, const CaptionTraining& training = {});

// A model file: the model, its checkpoint and its vocabulary.
struct CaptionerFile {
  Captioner model;
  io::Checkpoint checkpoint;
  data::Vocab vocab;
};
CaptionerFile load_captioner(const std::string& path);

// Split `split` of a data set for the model `m`, checked by check_caption_data; opened as training
// opens it (KeepData::automatic: a large split stays in `data`, which must outlive it).
CaptionSplit read_captioner_split(const io::File& data, const std::string& split, const CaptionerFile& m);

// Teacher-forced sums over a split and the attention correctness.
struct CaptionScores {
  train::BatchStats stats;
  int64_t named_words = 0;    // words with a box
  int64_t peaks_inside = 0;   // of those, whose attention peak is in the box
  double attention_correctness() const;   // NaN without named words
};
CaptionScores evaluate_captioner(const Captioner& model, const CaptionSplit& split, int64_t batch_size);

// The split's images captioned (greedy or beam search), in batches of batch_size images.
struct Captions {
  std::vector<std::vector<int32_t>> tokens;   // per image, without EOS
  std::vector<float> scores;
  Tensor attention;                           // [N, Tmax, h, w]
  int64_t exact = 0;                          // captions equal to the reference
  std::array<double, 4> bleu{};               // BLEU-1..4 against the references
  double sequence_accuracy() const;
};
// options.want_attention is taken as true: the captions' file holds the attention.
Captions caption_split(const Captioner& model, const CaptionSplit& split, decode::DecodeOptions options,
                       int64_t batch_size);

// The model file's teacher-forced sequence accuracy on the data set's /test split,
// {"test_sequence_accuracy", a} (none without one): what train --repeats records for every run.
std::vector<std::pair<std::string, double>> caption_test_scores(const std::string& model, const io::File& data);

// Writes captions into an open output file in the layout above (root attributes and /config are
// the caller's).
void write_captions(io::File& file, const Captions& captions, const CaptionSplit& split, const data::Vocab& vocab);

}  // namespace attn::caption
