// Fingerprints of a data set, stored in every model file a training run writes, so that
// --resume refuses to continue a run on data it was not trained on (every model family: the
// trainer writes and checks them, train/trainer.hpp).
//
//   vocab  a 64-bit hash of every string dataset under /vocab (its name and its strings, in
//          order): a model's embeddings mean something only with the vocabulary it was trained
//          with, so equal sizes are not enough
//   train  a 64-bit hash of every dataset under /train (name, type, shape and values): the same
//          split, bit for bit. The values are hashed in blocks of whole rows (about 2^22 values,
//          so that memory stays bounded), each block on its own and the block hashes in order;
//          the ranks of a data-parallel job can share the blocks out and gather their hashes, so
//          the job reads the split once and the value is the same for any number of ranks. Such
//          a shared value is the same on every rank whatever each rank's file holds, so the train
//          verbs under mpirun have each rank hash its own file whole (a dist::SingleProcess) and
//          compare the values (rank_agreement.hpp).
// Data sets without /vocab (the NTM tasks) hash to the fingerprint of no strings. Cost: one
// more read of the training split, about the time of loading it, divided by the ranks
// (docs/ARCHITECTURE.md).
//
// In a model file: group /trained_on, attributes data (the data file as the user named it),
// vocab_fingerprint and train_fingerprint (16 hexadecimal digits), train_fingerprint_block (the
// block size in values; absent in files whose train fingerprint was one hash over the whole
// split, which this version cannot recompute), docs/FORMATS.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "attn/dist/world.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::train {

struct DataFingerprint {
  std::string source;   // the data file as named ("-" for stdin)
  std::string vocab;    // 16 hex digits
  std::string train;    // 16 hex digits
  int64_t block = 0;    // values per hashed block of `train`; 0: one hash over the whole split (older files)
  bool empty() const { return vocab.empty() && train.empty(); }
};

// Values per hashed block of the training split (16 MiB of float32).
inline constexpr int64_t kFingerprintBlock = int64_t{1} << 22;

// The fingerprints of an open data set; `source` is data.display_name(). FormatError when it
// has no /train group. Every rank of `ranks` calls it (the blocks are shared out); `block` other
// than kFingerprintBlock gives other values (tests use small blocks).
DataFingerprint fingerprint_data(const io::File& data, dist::Communicator& ranks = dist::world(),
                                 int64_t block = kFingerprintBlock);

void write_fingerprint(io::File& model, const DataFingerprint& fp);
// The fingerprints stored in a model file; nullopt when it has none (written before they were).
std::optional<DataFingerprint> read_fingerprint(const io::File& model);

// Throws DataError naming the model file and both data files unless the data the model was
// trained on (`trained`, from `model_file`) has the vocabularies of `data` and, unless
// allow_new_data, its training split too. A model without fingerprints, or whose train
// fingerprint was computed another way, is refused unless allow_new_data (nothing can be
// compared; the families still compare vocabulary sizes).
void check_same_data(const std::optional<DataFingerprint>& trained, const std::string& model_file,
                     const DataFingerprint& data, bool allow_new_data);

}  // namespace attn::train
