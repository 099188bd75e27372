// The ranks' agreement before training (rank_agreement.hpp): every rank's settings gathered as
// one text each and compared with rank 0's, key by key.
#include "attn/train/rank_agreement.hpp"

#include <map>

#include "attn/core/error.hpp"

namespace attn::train {
namespace {

// A list of texts as one: each as its length, ':', its bytes (so any byte may occur in them).
void put(std::string& out, const std::string& text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

// The next text of `in` from `at` (put's layout; it comes from put on another rank of this build).
std::string take(const std::string& in, size_t& at) {
  const size_t colon = in.find(':', at);
  if (colon == std::string::npos) throw Error("train: a rank sent its settings garbled");
  const size_t n = std::stoull(in.substr(at, colon - at));
  if (n > in.size() - colon - 1) throw Error("train: a rank sent its settings garbled");
  at = colon + 1 + n;
  return in.substr(colon + 1, n);
}

std::string encode(const std::vector<RankSetting>& settings) {
  std::string out;
  for (const RankSetting& s : settings) {
    put(out, s.name);
    put(out, s.value);
    put(out, s.shown.empty() ? s.value : s.shown);
    put(out, s.blame == Blame::inputs ? "inputs" : "options");
  }
  return out;
}

std::vector<RankSetting> decode(const std::string& in) {
  std::vector<RankSetting> out;
  for (size_t at = 0; at < in.size();) {
    RankSetting s;
    s.name = take(in, at);
    s.value = take(in, at);
    s.shown = take(in, at);
    s.blame = take(in, at) == "inputs" ? Blame::inputs : Blame::options;
    out.push_back(std::move(s));
  }
  return out;
}

[[noreturn]] void differ(int rank, const RankSetting* theirs, const RankSetting* root, const std::string& advice) {
  const RankSetting& any = root ? *root : *theirs;
  const std::string message = "rank " + std::to_string(rank) + ": " + any.name + " is " +
                              (theirs ? theirs->shown : "not set") + ", rank 0's is " +
                              (root ? root->shown : "not set") + advice;
  if (any.blame == Blame::inputs) throw DataError(message);
  throw ConfigError(message);
}

}  // namespace

void agree_on_settings(dist::Communicator& ranks, const std::vector<RankSetting>& mine, const std::string& advice) {
  if (ranks.size() == 1) return;
  const std::vector<std::string> all = dist::allgather_strings(ranks, encode(mine));
  const std::vector<RankSetting> root = decode(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    const std::vector<RankSetting> theirs = decode(all[r]);
    std::map<std::string, const RankSetting*> by_name;   // the first of a name counts
    for (const RankSetting& s : theirs) by_name.emplace(s.name, &s);
    std::map<std::string, bool> in_root;
    for (const RankSetting& s : root) {
      if (!in_root.emplace(s.name, true).second) continue;
      const auto it = by_name.find(s.name);
      if (it == by_name.end()) differ(static_cast<int>(r), nullptr, &s, advice);
      if (it->second->value != s.value) differ(static_cast<int>(r), it->second, &s, advice);
    }
    for (const RankSetting& s : theirs)
      if (!in_root.contains(s.name)) differ(static_cast<int>(r), &s, nullptr, advice);
  }
}

void agree_on_data(dist::Communicator& ranks, const DataFingerprint& mine) {
  if (ranks.size() == 1) return;
  std::string packed;
  for (const std::string& field : {mine.source, mine.vocab, mine.train, std::to_string(mine.block)}) put(packed, field);
  const std::vector<std::string> all = dist::allgather_strings(ranks, packed);
  auto unpack = [&](size_t r) {
    size_t at = 0;
    DataFingerprint fp;
    fp.source = take(all[r], at);
    fp.vocab = take(all[r], at);
    fp.train = take(all[r], at);
    fp.block = std::stoll(take(all[r], at));
    return fp;
  };
  const DataFingerprint root = unpack(0);
  for (size_t r = 1; r < all.size(); ++r) {
    const DataFingerprint theirs = unpack(r);
    if (theirs.vocab == root.vocab && theirs.train == root.train && theirs.block == root.block) continue;
    // The vocabularies first: other words make every other difference moot.
    const bool vocab = theirs.vocab != root.vocab;
    auto shown = [&](const DataFingerprint& fp) {
      return "'" + fp.source + "' (" + (vocab ? "vocab fingerprint " + fp.vocab : "train fingerprint " + fp.train) +
             ")";
    };
    throw DataError("rank " + std::to_string(r) + ": the training data is " + shown(theirs) + ", rank 0's is " +
                    shown(root) +
                    (theirs.source == root.source ? ": the same name, other contents (does the file differ between "
                                                    "the machines?)"
                                                  : "") +
                    "; every rank of a data-parallel job must train on the same data (the same bits under any name); "
                    "stopping the job");
  }
}

}  // namespace attn::train
