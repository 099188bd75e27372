// What the ranks of a data-parallel job must agree on before they train, and the check that they
// do (data_parallel.hpp: every rank plans the same batches and takes the same steps, which only
// holds when every rank was started alike).
//
// Ranks can be started differently: `mpirun -np 1 tool args : -np 1 tool other-args` (MPMD), a
// data file that differs between machines under the same path, a --resume checkpoint that does.
// Unchecked, such a job trains on a silent mix of both data sets, or its ranks' plans drift apart
// until one waits for the other for --rank-timeout. So before the first step the ranks gather what
// each was started with, as (name, value) pairs, and compare every rank's with rank 0's, key by
// key; a difference stops the job on every rank at once (every rank decides from the same gathered
// lists, so all throw the same error: exit 2 for a setting, 3 for the data), naming the rank, the
// setting and both values:
//   rank 1: --lr is 0.2, rank 0's is 0.1
//   rank 1: the training data is 'b.h5' (train fingerprint 1a2b...), rank 0's is 'a.h5' (9f8e...)
// Rank 0's values are the reference; the lowest rank that differs is named, at its first
// difference in rank 0's order. With one rank nothing is exchanged.
//
// The train verbs check the tool, the build and the options before they open the splits (whose
// checks the ranks share out, so they must read the same file), then the data's fingerprint;
// train::fit checks what it resolved from them (the model's /config, the trainer's configuration,
// the optimizer and its schedule, the step plan and the step it starts from), which also covers a
// program calling fit itself.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "attn/dist/communicator.hpp"
#include "attn/train/data_fingerprint.hpp"

namespace attn::train {

// Who is to blame when ranks differ: the way they were started (ConfigError, exit 2) or an input
// file (DataError, exit 3).
enum class Blame { options, inputs };

// One thing every rank must have alike. The message says "rank 1: <name> is <shown>, rank 0's is
// <shown>"; `value` is what is compared (`shown` defaults to it: a fingerprint is compared alone,
// shown beside its file's name).
struct RankSetting {
  RankSetting() = default;
  RankSetting(std::string name, std::string value, std::string shown = "", Blame blame = Blame::options)
      : name(std::move(name)), value(std::move(value)), shown(std::move(shown)), blame(blame) {}
  std::string name;    // "--lr", "/config controller_size", "the step plan: batches per epoch"
  std::string value;   // compared, byte for byte
  std::string shown;   // in the message; "" shows `value`
  Blame blame = Blame::options;
};

// Every rank calls it with its own settings (in any order; the same names on every rank, else a
// name only some have is a difference: "not set" on the others). Returns when every rank's equal
// rank 0's; else throws, on every rank, ConfigError or DataError (the setting's blame) naming the
// rank, the setting and both values, followed by `advice` (what may differ, or how to fix it).
void agree_on_settings(dist::Communicator& ranks, const std::vector<RankSetting>& mine, const std::string& advice);

// The data fingerprints (vocab and train) of every rank, compared with rank 0's (DataError naming
// the rank, both files and both fingerprints). Each rank's must be its own file's, computed whole
// (fingerprint_data with a dist::SingleProcess): a fingerprint the ranks share out is the same on
// every rank whatever their files hold.
void agree_on_data(dist::Communicator& ranks, const DataFingerprint& mine);

}  // namespace attn::train
