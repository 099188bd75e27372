// The neural Turing machine (families/ntm/model.hpp) on the sequence tasks of attn-data (copy, repeat
// copy, associative recall, priority sort; data/sequence_data.hpp): its TrainTask, with epochs of
// a fixed number of sequences and an optional curriculum over sequence length; evaluation; runs
// that keep every head's weightings; model files; the LSTM baseline of Graves et al. Fig. 3.
// attn-ntm's verbs are thin front ends over these functions.
//
// What is measured (the NTM literature's):
//   loss               cost per sequence in bits: the binary cross-entropy of a sequence's output
//                      bits, summed, in bits (Graves et al. 2014, Fig. 3), averaged over sequences
//   bit_errors         output bits wrong after thresholding at 0.5, per sequence (the "cost" of
//                      the widely used pytorch-ntm)
//   bit_error_rate     bit errors / output bits
//   sequence_accuracy  sequences without a bit error
// Work is counted in sequences.
//
// A model file is a checkpoint of kind "ntm" (io/checkpoint.hpp, with the trainer's /state and
// /metrics; /state/curriculum_level with a curriculum). A run file (format "attnlab/output", kind
// "ntm-run") holds, for the N sequences of a split in data-set order:
//   /inputs, /input_len, /targets, /target_len   the split's sequences (data/sequence_data.hpp)
//   /outputs        float32 [N, Tout, O]      the model's outputs σ(y); zero past target_len
//   /read_weights   float32 [N, T, Nr, Nm]    every read head's weighting at every step
//   /write_weights  float32 [N, T, Nw, Nm]    the same for the write heads; T = the longest
//                                             input_len + target_len, zero past an example's end
//   /metrics        attributes sequences, bits_per_sequence, bit_errors_per_sequence,
//                   bit_error_rate, sequence_accuracy
// `attn-plot weights RUN.h5 --index i --inputs /inputs --outputs /outputs --write
// /write_weights --read /read_weights` draws sequence i as Graves et al. Fig. 6 does.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/sequence_data.hpp"
#include "attn/families/ntm/model.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/model_file.hpp"
#include "attn/train/split_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::ntm {

// Names of the NTM task's BatchStats sums and its metrics (see above).
inline const std::vector<std::string> kNtmSums = {"bit_errors", "bits", "sequences_correct"};
train::BatchStats to_stats(const NtmStats& s);
double bit_errors_per_sequence(const train::BatchStats& s);
double bit_error_rate(const train::BatchStats& s);
double sequence_accuracy(const train::BatchStats& s);

// How the training sequences are served.
struct NtmTraining {
  int64_t batch_size = 1;        // sequences per step
  int64_t epoch_size = 0;        // sequences per epoch (validation and a curve entry after each);
                                 // 0: the whole training set
  uint64_t seed = 1;             // the order of the sequences (with the epoch)
  // Curriculum over sequence length (Zaremba & Sutskever 2014's "naive" strategy, with the
  // shorter lengths kept): an epoch draws only sequences whose input_len is at most the current
  // level, which starts at the shortest input_len of the training set and moves up to the next
  // one present after every epoch whose training bit error rate is at most the threshold.
  bool curriculum = false;
  double curriculum_threshold = 0.01;
};

// The trainer's view of an NTM on a sequence split: kind "ntm", config = model.config().to_attrs(),
// unit sequences, the metrics above. Epoch e serves epoch_size sequences (repeating the eligible
// ones in a fresh random order as often as needed) in batches of batch_size; the curriculum's
// level is the task's state. train and valid must have the model's widths (FormatError naming the
// dataset otherwise); they and the model must outlive the task; valid may be null.
train::TrainTask ntm_task(Ntm& model, const data::SequenceSplit& train, const data::SequenceSplit* valid,
                          const NtmTraining& options);

// Throws FormatError naming the file and dataset unless the split's channel widths are the model's
// (a split of another task, or of a translation data set, is refused before anything runs).
void check_widths(const NtmConfig& config, const data::SequenceSplit& split, const std::string& file,
                  const std::string& split_name);

// The split `split` of an open data set for a model of `config`, for the eval and run verbs:
// checked by check_widths and refused when empty (require_examples); opened as training opens it
// (KeepData::automatic: a large split stays in `data`, which must outlive it).
data::SequenceSplit read_ntm_split(const io::File& data, const std::string& split, const NtmConfig& config);

using NtmFile = train::LoadedModel<Ntm>;
// Reads a model file written by the trainer (load_model: FormatError / ShapeError naming the
// file when it is not an NTM model or does not fit its config).
NtmFile load_ntm(const std::string& path);

// The task's sums over every sequence of `split`, in runs of batch_size consecutive sequences.
train::BatchStats evaluate_ntm(const Ntm& model, const data::SequenceSplit& split, int64_t batch_size);

// The outputs and weightings of every sequence of `split` (the run file's datasets, by name:
// "outputs", "read_weights", "write_weights") and their sums.
struct NtmRunResult {
  NamedTensors tensors;
  train::BatchStats stats;
};
NtmRunResult run_ntm(const Ntm& model, const data::SequenceSplit& split, int64_t batch_size);

// Writes a run into an open output file in the layout above (root attributes and /config are
// the caller's).
void write_ntm_run(io::File& file, const data::SequenceSplit& split, const NtmRunResult& run);

// Graves et al.'s LSTM baseline for an NTM of `ntm`'s widths: an LSTM of `layers` layers and no
// memory, its width the smallest whose parameter count reaches the NTM's (a comparable model).
NtmConfig lstm_baseline(const NtmConfig& ntm, int64_t layers);
// The number of parameters (scalars) of a model of `config`.
int64_t parameter_count(const NtmConfig& config);

}  // namespace attn::ntm
