// The end-to-end memory network (families/memnet/model.hpp) on bAbI question answering (the layout of
// families/memnet/qa_data.hpp, written by `attn-data babi`): its TrainTask with linear start and random
// noise, evaluation with per-task accuracy, answers with every hop's attention, model files.
// attn-memnet's verbs are thin front ends over these functions.
//
// What is measured (Sukhbaatar et al. 2015's):
//   loss       the mean cross-entropy of the answer word, nats per question
//   accuracy   questions whose predicted word is the answer
//   error      1 - accuracy (the paper's tables give the test error)
// Work is counted in questions.
//
// Linear start (LS, the paper's sec. 4.2): the model starts with its hops' softmax removed
// (MemN2N::set_linear_start) and it is restored after the first epoch whose validation loss
// (the training loss without a validation set) does not improve on the best so far (the
// paper's rule), or after exactly linear_start_epochs epochs (the authors' code: 20 on one
// task, 30 joint). As in the authors' code, the learning rate stays at its initial value while
// the softmax is out, and training "recommences" when it is restored: the schedule starts
// again from its first step. LS is the trainer's start phase "linear_start" (trainer.hpp,
// StartPhase), whose state /state keeps (linear_start 0/1, linear_start_best, linear_start_end)
// so that a resumed run repeats the same bits; load_memnet restores the mode, so that a model
// saved while LS is still on is evaluated as it was validated.
// Random noise (RN): the trainer's stream is passed to MemN2N::train_step.
//
// A model file is a checkpoint of kind "memnet" (io/checkpoint.hpp, with the trainer's /state
// and /metrics) plus /vocab/words, the vocabulary of the data set it was trained on.
// An answers file (format "attnlab/output", kind "memnet-answers") holds, for the N questions
// of a split in data-set order:
//   /predictions      int32 [N]              the predicted word id
//   /answer           int32 [N]              the right one (the split's)
//   /correct          int32 [N]              1 where they agree
//   /attention/hops   float32 [N, Nhop, Ms]  every hop's attention over the memory slots (0
//                                            outside the model's window and past story_len;
//                                            under linear start, the raw scores)
//   /attention/support_hops  float32 [N, 1 + Nhop, Ms]  the same after a first row that is 1 at
//                                            the supporting facts' slots (/support), 0 elsewhere
//   /story, /story_len, /question, /support, /task   the split's (families/memnet/qa_data.hpp)
//   /vocab/words      the vocabulary
//   /metrics          attributes questions, loss, accuracy, error; dataset task_accuracy float32
//                     [20]: the accuracy on task t at t - 1, NaN for tasks absent from the split
// `attn-plot table ANSWERS --dataset /attention/hops --index I --transpose --row-ids /story
// --row-vocab /vocab/words --col-labels "hop 1|hop 2|hop 3"` draws question I's hop table
// (Sukhbaatar et al. Table 2); --dataset /attention/support_hops with --col-labels
// "support|hop 1|hop 2|hop 3" adds the supporting facts as the first column.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/memnet/model.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/split_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::memnet {

// Names of the task's BatchStats sums and its metrics (see above).
inline const std::vector<std::string> kMemnetSums = {"correct"};
train::BatchStats to_stats(const MemN2NStats& s);
double answer_accuracy(const train::BatchStats& s);   // NaN when nothing was counted
double answer_error(const train::BatchStats& s);

// How a memory network is trained besides the trainer's options.
struct MemnetTraining {
  bool linear_start = false;   // LS, see above
  int64_t linear_start_epochs = 0;   // > 0: LS lasts this many epochs; 0: until the loss stops falling
  bool random_noise = false;   // RN (temporal encoding only: nothing to move otherwise)
};

// The trainer's view of a MemN2N on bAbI splits: kind "memnet", config =
// model.config().to_attrs(), unit questions, the metrics above, lengths = story_len. `vocab` is
// written to every saved file. train and valid must fit the model (check_fits); they, the
// model and the vocabulary must outlive the task; valid may be null.
train::TrainTask memnet_task(MemN2N& model, const QaSplit& train, const QaSplit* valid, const data::Vocab& vocab,
                             const MemnetTraining& options);

// Throws FormatError naming the file unless the data set's vocabulary is the model's size
// (and, given the model's words, the same words): a model is only used on the data it knows.
void check_vocab(const MemN2NConfig& config, const data::Vocab& data_vocab, const std::string& file,
                 const data::Vocab* model_vocab = nullptr);

// A model file: the model (in linear-start mode when its /state says so), its checkpoint and
// its vocabulary.
struct MemnetFile {
  MemN2N model;
  io::Checkpoint checkpoint;
  data::Vocab vocab;
};
// load_model (FormatError / ShapeError naming the file) plus /vocab/words.
MemnetFile load_memnet(const std::string& path);

// Sums over a split and the per-task counts.
struct MemnetScores {
  train::BatchStats stats;
  std::array<int64_t, 21> task_questions{};   // by task 1..20 (0 unused)
  std::array<int64_t, 21> task_correct{};
  int tasks() const;                          // tasks present
  double task_accuracy(int task) const;       // NaN when absent
};

// The model on every question of `split`, in runs of batch_size consecutive questions.
MemnetScores evaluate_memnet(const MemN2N& model, const QaSplit& split, int64_t batch_size);

// Split `split` of a bAbI data set for the model `m`: its vocabulary checked against the model's
// (check_vocab), then opened as training opens it (KeepData::automatic: a large split stays in
// `data`, which must outlive it).
QaSplit read_memnet_split(const io::File& data, const std::string& split, const MemnetFile& m);

// A model file's error on the data set's /test split, {"test_error", e} (none without one): the
// score train --repeats records for every run. The data set must be the model's (check_vocab).
std::vector<std::pair<std::string, double>> memnet_test_scores(const std::string& model, const io::File& data);

struct MemnetAnswers {
  Tensor predictions;   // int32 [N]
  Tensor attention;     // float32 [N, Nhop, Ms], Ms the split's
  MemnetScores scores;
};
MemnetAnswers answer_memnet(const MemN2N& model, const QaSplit& split, int64_t batch_size);

// Writes answers into an open output file in the layout above (root attributes and /config are
// the caller's).
void write_memnet_answers(io::File& file, const QaSplit& split, const data::Vocab& vocab, const MemnetAnswers& answers);

}  // namespace attn::memnet
