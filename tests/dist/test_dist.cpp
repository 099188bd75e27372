// The collectives of lib/dist and the data-parallel step of train/data_parallel, on N ranks that
// are threads of this process: ThreadRanks, a Communicator whose exchange passes byte vectors
// through mailboxes. The algorithms only see Communicator::start_exchange, so this tests the very
// code an MPI job runs, without a launcher.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "attn/data/token_data.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/families/seq2seq/run.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/nn/grad_ready.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/linear.hpp"
#include "attn/train/data_fingerprint.hpp"
#include "attn/train/data_parallel.hpp"
#include "attn/train/rank_agreement.hpp"
#include "attn/train/split_run.hpp"
#include "reversal_fixture.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Mailboxes between N threads: box (from, to) holds the messages from `from` to `to` in order.
class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), boxes_(static_cast<size_t>(n * n)) {}
  int size() const { return n_; }
  // The oldest message of `tag` from `from` to `to`, if one has arrived.
  std::optional<std::vector<std::byte>> try_take(int from, int to, int tag) {
    Box& b = box(from, to);
    const std::lock_guard lock(b.m);
    for (auto it = b.q.begin(); it != b.q.end(); ++it)
      if (it->first == tag) {
        std::vector<std::byte> out = std::move(it->second);
        b.q.erase(it);
        return out;
      }
    return std::nullopt;
  }
  void post(int from, int to, int tag, std::span<const std::byte> data) {
    Box& b = box(from, to);
    const std::lock_guard lock(b.m);
    b.q.emplace_back(tag, std::vector<std::byte>(data.begin(), data.end()));
  }

 private:
  struct Box {
    std::mutex m;
    std::deque<std::pair<int, std::vector<std::byte>>> q;   // (tag, bytes), oldest first
  };
  int n_;
  std::vector<Box> boxes_;
  Box& box(int from, int to) { return boxes_[static_cast<size_t>(from * n_ + to)]; }
};

class ThreadRank final : public dist::Communicator {
 public:
  ThreadRank(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  void set_timeout(double) override {}
  double timeout() const override { return 20; }
  // The send is posted at once; the receive is done when a message of the tag has arrived.
  std::unique_ptr<dist::Exchange> start_exchange(int to, std::span<const std::byte> send, int from,
                                                 std::span<std::byte> recv, int tag) override {
    group_.post(rank_, to, tag, send);
    traffic_.bytes_sent += static_cast<int64_t>(send.size());
    return std::make_unique<Receive>(group_, rank_, to, from, recv, tag);
  }

 private:
  struct Receive final : dist::Exchange {
    Receive(ThreadGroup& g, int self, int to, int from, std::span<std::byte> recv, int tag)
        : Exchange(to, from), group(g), self(self), recv(recv), tag(tag) {}
    ThreadGroup& group;
    int self;
    std::span<std::byte> recv;
    int tag;
    bool done = false;
    bool test() override {
      if (done) return true;
      const std::optional<std::vector<std::byte>> got = group.try_take(from, self, tag);
      if (!got) return false;
      if (got->size() != recv.size()) throw Error("ThreadRank: message of the wrong size");
      if (!got->empty()) std::memcpy(recv.data(), got->data(), got->size());
      return done = true;
    }
  };
  ThreadGroup& group_;
  int rank_;
};

// Runs body(comm) on n ranks, one thread each; rethrows the first exception any rank threw.
void on_ranks(int n, const std::function<void(dist::Communicator&)>& body) {
  ThreadGroup group(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        ThreadRank comm(group, r);
        body(comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Rank r's values: a fixed random vector per rank.
std::vector<float> values_of(int rank, size_t n) {
  Rng rng(100 + static_cast<uint64_t>(rank));
  std::vector<float> v(n);
  rng.fill_normal(v, 0.0f, 1.0f);
  return v;
}

}  // namespace

TEST_CASE("allreduce_sum: every rank gets the same bits, each chunk summed in the ring's fixed order",
          "[unit][dist]") {
  for (const int N : {2, 3, 4}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{10}, size_t{1001}}) {
      std::vector<std::vector<float>> result(static_cast<size_t>(N));
      on_ranks(N, [&](dist::Communicator& comm) {
        std::vector<float> v = values_of(comm.rank(), n);
        dist::allreduce_sum(comm, v);
        result[static_cast<size_t>(comm.rank())] = std::move(v);
      });
      // Element i of chunk c: ((a_c + a_{c+1}) + ...) + a_{c-1}, rank indices mod N.
      std::vector<float> expected(n);
      for (int c = 0; c < N; ++c) {
        const size_t begin = n * static_cast<size_t>(c) / static_cast<size_t>(N);
        const size_t end = n * static_cast<size_t>(c + 1) / static_cast<size_t>(N);
        for (size_t i = begin; i < end; ++i) {
          float acc = values_of(c, n)[i];
          for (int k = 1; k < N; ++k) acc = acc + values_of((c + k) % N, n)[i];
          expected[i] = acc;
        }
      }
      INFO("N " << N << ", n " << n);
      for (int r = 0; r < N; ++r) CHECK(same_bits(result[static_cast<size_t>(r)], expected));
    }
  }
}

// A rank (0 of 2 unless told) whose peers never answer, with a timeout short enough for a test.
class Unanswered final : public dist::Communicator {
 public:
  explicit Unanswered(int rank = 0, int size = 2) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }
  std::unique_ptr<dist::Exchange> start_exchange(int to, std::span<const std::byte>, int from, std::span<std::byte>,
                                                 int) override {
    struct Never final : dist::Exchange {
      using Exchange::Exchange;
      bool test() override { return false; }
    };
    return std::make_unique<Never>(to, from);
  }

 private:
  int rank_, size_;
  double timeout_ = 0.3;
};

// Issue 51: a rank stopped (SIGSTOP) and resumed by mpirun's SIGCONT found its wait past the
// timeout and reported that it had waited for the rank that was waiting for it.
TEST_CASE("Waiter: a rank's own stall does not count against the timeout, its peer's silence does", "[unit][dist]") {
  using std::chrono::steady_clock;
  Unanswered comm;
  dist::Waiter waiter(comm);
  waiter.pause(1, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));   // this rank was stopped, then resumed
  CHECK_NOTHROW(waiter.pause(1, 1));
  const steady_clock::time_point resumed = steady_clock::now();
  std::string message;
  try {
    for (;;) waiter.pause(1, 1);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(std::chrono::duration<double>(steady_clock::now() - resumed).count() >= 0.25);   // the timeout, run anew
  CHECK_THAT(message, Catch::Contains("dist: rank 1 of 2 stalled (it died or hung, or is busy for longer than "
                                      "--rank-timeout): rank 0, the waiting rank, had no answer from it for 0 s; "
                                      "stopping the job"));
  // A blocking exchange waits the same way.
  std::byte out[4] = {}, in[4] = {};
  CHECK_THROWS_WITH(comm.exchange(1, out, 1, in), Catch::Contains("rank 1 of 2 stalled") &&
                                                      Catch::Contains("rank 0, the waiting rank, had no answer"));
}

// Issue 51: the message is printed by the waiting rank, under a prefix naming it ("rank 1 of 2:"),
// so the stalled rank is its subject and the printing rank is named as the one that waited.
TEST_CASE("Waiter: the timeout's message names the stalled rank as stalled and this rank as waiting", "[unit][dist]") {
  std::byte out[4] = {}, in[4] = {};
  Unanswered second(/*rank=*/1, /*size=*/2);   // rank 1 waits for rank 0
  CHECK_THROWS_WITH(second.exchange(0, out, 0, in),
                    Catch::StartsWith("dist: rank 0 of 2 stalled (it died or hung, or is busy for longer than "
                                      "--rank-timeout): rank 1, the waiting rank, had no answer from it for 0 s"));
  // In a ring of 3, rank 2 sends to rank 0 and receives from rank 1: either (or a rank behind them)
  // may be the one that stalled.
  Unanswered third(/*rank=*/2, /*size=*/3);
  CHECK_THROWS_WITH(third.exchange(0, out, 1, in),
                    Catch::StartsWith("dist: rank 1 or rank 0 of 3 stalled, or a rank they wait for did (it died or "
                                      "hung, or is busy for longer than --rank-timeout): rank 2, the waiting rank, had "
                                      "no answer from them for 0 s"));
}

TEST_CASE("allgather: every rank's block in rank order", "[unit][dist]") {
  std::vector<std::vector<double>> result(3);
  on_ranks(3, [&](dist::Communicator& comm) {
    const double mine[2] = {10.0 * comm.rank(), 10.0 * comm.rank() + 1};
    result[static_cast<size_t>(comm.rank())] = dist::allgather(comm, std::span<const double>(mine, 2));
  });
  for (const std::vector<double>& r : result) CHECK(r == std::vector<double>{0, 1, 10, 11, 20, 21});
  dist::SingleProcess one;   // one rank: its own block, nothing exchanged
  const double x = 7;
  CHECK(dist::allgather(one, std::span<const double>(&x, 1)) == std::vector<double>{7});
  std::vector<float> v{1.5f, 2.5f};
  dist::allreduce_sum(one, v);
  CHECK(v == std::vector<float>{1.5f, 2.5f});
}

TEST_CASE("allgather_strings: every rank's text, of any length and any bytes, in rank order", "[unit][dist]") {
  const std::vector<std::string> texts{"", std::string("a:\0b", 4), std::string(300, 'c')};
  std::vector<std::vector<std::string>> result(3);
  on_ranks(3, [&](dist::Communicator& comm) {
    result[static_cast<size_t>(comm.rank())] = dist::allgather_strings(comm, texts[static_cast<size_t>(comm.rank())]);
  });
  for (const std::vector<std::string>& r : result) CHECK(r == texts);
  dist::SingleProcess one;
  CHECK(dist::allgather_strings(one, "x") == std::vector<std::string>{"x"});
}

namespace {

// What each of n ranks threw running `body`: the message ("" when it returned) and its exit code's
// class (2: ConfigError, 3: DataError).
struct Outcome {
  std::string message;
  int code = 0;
};
std::vector<Outcome> outcomes(int n, const std::function<void(dist::Communicator&)>& body) {
  std::vector<Outcome> out(static_cast<size_t>(n));
  on_ranks(n, [&](dist::Communicator& comm) {
    Outcome& mine = out[static_cast<size_t>(comm.rank())];
    try {
      body(comm);
    } catch (const DataError& e) {
      mine = {e.what(), 3};
    } catch (const ConfigError& e) {
      mine = {e.what(), 2};
    }
  });
  return out;
}

// Every rank threw the same error (so every rank of a job stops with the same exit code).
void check_all_threw(const std::vector<Outcome>& got, const std::string& message, int code) {
  for (size_t r = 0; r < got.size(); ++r) {
    INFO("rank " << r);
    CHECK(got[r].message == message);
    CHECK(got[r].code == code);
  }
}

}  // namespace

// Issue 51: ranks started with other options trained on until their plans drifted apart.
TEST_CASE("agree_on_settings: the lowest rank that differs from rank 0, at its first difference, with both values",
          "[unit][dist]") {
  using train::RankSetting;
  const std::vector<RankSetting> base{{"--lr", "0.1"}, {"--steps", "4"}, {"the tool", "attn-ntm train"}};
  auto with = [&](std::vector<RankSetting> s, const std::string& name, const std::string& value) {
    for (RankSetting& x : s)
      if (x.name == name) x.value = value;
    return s;
  };
  const std::string advice = "; start them alike";
  // Rank 2 differs in --lr, rank 1 in --steps: rank 1 is named (the lowest), on every rank.
  check_all_threw(outcomes(3,
                           [&](dist::Communicator& comm) {
                             const std::vector<RankSetting> mine = comm.rank() == 1   ? with(base, "--steps", "6")
                                                                   : comm.rank() == 2 ? with(base, "--lr", "0.2")
                                                                                      : base;
                             train::agree_on_settings(comm, mine, advice);
                           }),
                  "rank 1: --steps is 6, rank 0's is 4; start them alike", 2);
  // The first difference in rank 0's order, whatever order rank 1 lists them in.
  check_all_threw(outcomes(2,
                           [&](dist::Communicator& comm) {
                             std::vector<RankSetting> mine = with(with(base, "--steps", "6"), "--lr", "0.2");
                             if (comm.rank() == 1) std::reverse(mine.begin(), mine.end());
                             train::agree_on_settings(comm, comm.rank() == 0 ? base : mine, advice);
                           }),
                  "rank 1: --lr is 0.2, rank 0's is 0.1; start them alike", 2);
  // A setting only one side has.
  check_all_threw(outcomes(2,
                           [&](dist::Communicator& comm) {
                             std::vector<RankSetting> mine = base;
                             if (comm.rank() == 1) mine.erase(mine.begin() + 1);
                             train::agree_on_settings(comm, mine, "");
                           }),
                  "rank 1: --steps is not set, rank 0's is 4", 2);
  check_all_threw(outcomes(2,
                           [&](dist::Communicator& comm) {
                             std::vector<RankSetting> mine = base;
                             if (comm.rank() == 1) mine.push_back({"--beta1", "0.9"});
                             train::agree_on_settings(comm, mine, "");
                           }),
                  "rank 1: --beta1 is 0.9, rank 0's is not set", 2);
  // An input's setting: compared by value, shown as told, a DataError.
  check_all_threw(
      outcomes(2,
               [&](dist::Communicator& comm) {
                 const std::string step = comm.rank() == 0 ? "4" : "8";
                 train::agree_on_settings(
                     comm, {{"the step it starts from", step, step + " of 'm" + step + ".h5'", train::Blame::inputs}},
                     "");
               }),
      "rank 1: the step it starts from is 8 of 'm8.h5', rank 0's is 4 of 'm4.h5'", 3);
  // Alike (shown texts may differ: a file's name): nothing thrown; one rank compares nothing.
  check_all_threw(
      outcomes(3,
               [&](dist::Communicator& comm) {
                 train::agree_on_settings(comm, {{"the data", "same", "f" + std::to_string(comm.rank())}}, "");
               }),
      "", 0);
  dist::SingleProcess one;
  CHECK_NOTHROW(train::agree_on_settings(one, base, ""));
}

// Issue 51: ranks on different data files of the same shape trained on a mix of both, because the
// fingerprint the ranks share out (each hashing a share of its own file's blocks) was the same on
// every rank. Each rank's own fingerprint, computed whole, tells the files apart.
TEST_CASE("agree_on_data: each rank's own fingerprint against rank 0's, naming both files", "[unit][dist]") {
  test::TempDir dir;
  Rng rng(5);
  for (const char* name : {"a.h5", "b.h5"}) {
    io::File f = io::File::create(dir.file(name));
    f.write("/train/x", randn({40, 3}, rng));   // the same shape, other values
    f.commit();
  }
  auto file_of = [&](int rank) { return dir.file(rank == 0 ? "a.h5" : "b.h5"); };
  std::vector<train::DataFingerprint> shared(2), own(2);
  const std::vector<Outcome> got = outcomes(2, [&](dist::Communicator& comm) {
    const io::File f = io::File::open_read(file_of(comm.rank()));
    shared[static_cast<size_t>(comm.rank())] = train::fingerprint_data(f, comm, 16);
    dist::SingleProcess alone;
    own[static_cast<size_t>(comm.rank())] = train::fingerprint_data(f, alone, 16);
    train::agree_on_data(comm, own[static_cast<size_t>(comm.rank())]);
  });
  CHECK(shared[0].train == shared[1].train);   // shared out: blind to the difference
  REQUIRE(own[0].train != own[1].train);
  check_all_threw(got,
                  "rank 1: the training data is '" + file_of(1) + "' (train fingerprint " + own[1].train +
                      "), rank 0's is '" + file_of(0) + "' (train fingerprint " + own[0].train +
                      "); every rank of a data-parallel job must train on the same data (the same bits under any "
                      "name); stopping the job",
                  3);
  // The same name with other contents (a file that differs between machines) is said so; other
  // vocabularies are named first.
  const train::DataFingerprint a{"d.h5", "1111", "2222", 16}, b{"d.h5", "1111", "3333", 16},
      c{"d.h5", "4444", "3333", 16};
  for (const auto& [other, what] :
       {std::pair{b, "(train fingerprint 3333), rank 0's is 'd.h5' (train fingerprint 2222): "
                     "the same name, other contents"},
        std::pair{c, "(vocab fingerprint 4444), rank 0's is 'd.h5' (vocab fingerprint 1111)"}}) {
    const std::vector<Outcome> r = outcomes(
        3, [&](dist::Communicator& comm) { train::agree_on_data(comm, comm.rank() == 2 ? other : a); });
    for (const Outcome& o : r) {
      CHECK_THAT(o.message, Catch::StartsWith("rank 2: the training data is 'd.h5' ") && Catch::Contains(what));
      CHECK(o.code == 3);
    }
  }
  check_all_threw(
      outcomes(2,
               [&](dist::Communicator& comm) {
                 train::agree_on_data(comm, {"x" + std::to_string(comm.rank()) + ".h5", "1111", "2222", 16});
               }),
      "", 0);
}

TEST_CASE("shard_of: rows rank, rank + N, ... of a global batch", "[unit][dist]") {
  const std::vector<int64_t> batch{7, 3, 9, 1, 4};
  CHECK(train::shard_of(batch, 0, 2) == std::vector<int64_t>{7, 9, 4});
  CHECK(train::shard_of(batch, 1, 2) == std::vector<int64_t>{3, 1});
  CHECK(train::shard_of(batch, 4, 8) == std::vector<int64_t>{4});
  CHECK(train::shard_of(batch, 6, 8).empty());
  CHECK(train::shard_of(batch, 0, 1) == batch);
  CHECK_THROWS_AS(train::shard_of(batch, 2, 2), ConfigError);
}

namespace {

// A linear softmax classifier over fixed random data: the gradient of the mean cross-entropy of
// the rows it is given, as every family's train_batch.
struct Linear {
  static constexpr int64_t kN = 23, kF = 6, kC = 5;
  Tensor X = Tensor({kN, kF}), y = Tensor({kN}, DType::i32);
  Param W{"w", Tensor({kC, kF})}, b{"b", Tensor({kC})};
  train::TrainTask task;
  bool announces = false;   // its gradients as final (nn/grad_ready.hpp)

  Linear() {
    Rng rng(9);
    X = randn({kN, kF}, rng);
    for (int64_t i = 0; i < kN; ++i) y.idata()[i] = static_cast<int32_t>(i % kC);
    W.value = randn({kC, kF}, rng, 0.3f);
    b.value = randn({kC}, rng, 0.3f);
    task.kind = "linear";
    task.params = {&W, &b};
    task.sums = {"correct"};
    task.train_batch = [this](std::span<const int64_t> index, Rng&) { return run(index, true); };
    task.valid_batch = [this](std::span<const int64_t> index) { return run(index, false); };
  }
  train::BatchStats run(std::span<const int64_t> index, bool backward) {
    const auto n = static_cast<int64_t>(index.size());
    Tensor x({n, kF}), t({n}, DType::i32);
    for (int64_t r = 0; r < n; ++r) {
      std::memcpy(x.data() + r * kF, X.data() + index[r] * kF, kF * sizeof(float));
      t.idata()[r] = y.idata()[index[r]];
    }
    ops::LinearCache lin;
    ops::CrossEntropyCache ce;
    const Tensor logits = ops::linear_forward(x, W.value, b.value, backward ? &lin : nullptr);
    const auto loss = ops::cross_entropy_forward(logits, t, {}, &ce);
    if (backward) {
      if (announces) nn::announce_loss_count(static_cast<double>(loss.count));
      ops::linear_backward(ops::cross_entropy_backward(1.0f, ce), W.value, lin, W.grad, b.grad);
      if (announces) {
        nn::announce_final(std::vector<Param*>{&b});
        nn::announce_final(std::vector<Param*>{&W, &b});   // b again: said twice is said once
      }
    }
    return {.loss_sum = loss.sum, .count = static_cast<double>(loss.count), .units = loss.count,
            .sums = {static_cast<double>(loss.correct)}};
  }
};

}  // namespace

TEST_CASE("DataParallel: N ranks' step gives one process's gradient and sums, validation bit for bit",
          "[unit][dist]") {
  const std::vector<int64_t> batch{4, 11, 0, 19, 7, 2, 15};   // 7 rows: shards of unequal size
  Linear one;
  zero_grads(one.task.params);
  Rng rng(5);
  const train::BatchStats want = one.task.train_batch(batch, rng);
  std::vector<int32_t> lengths(Linear::kN);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int32_t>(1 + i % 4);
  const train::BatchStats want_valid = train::evaluate(one.task.valid_batch, lengths, /*max_tokens=*/8);

  for (const int N : {2, 3, 8}) {   // 8 ranks: one gets no row at all
    std::vector<Tensor> dW(static_cast<size_t>(N)), db(static_cast<size_t>(N));
    std::vector<train::BatchStats> got(static_cast<size_t>(N)), valid(static_cast<size_t>(N));
    on_ranks(N, [&](dist::Communicator& comm) {
      Linear model;
      train::DataParallel dp(comm, model.task);
      zero_grads(model.task.params);
      Rng stream(5);
      const auto r = static_cast<size_t>(comm.rank());
      got[r] = dp.train_batch(batch, stream);
      dW[r] = model.W.grad.clone();
      db[r] = model.b.grad.clone();
      valid[r] = dp.evaluate(model.task.valid_batch, lengths, /*max_tokens=*/8, /*batch_size=*/0);
      dp.check_same_params("in the test");
    });
    INFO("N " << N);
    for (size_t r = 0; r < static_cast<size_t>(N); ++r) {
      CHECK(same_bits(dW[r].values(), dW[0].values()));   // every rank: the same bits
      CHECK(same_bits(db[r].values(), db[0].values()));
      CHECK(got[r].count == want.count);
      CHECK(got[r].units == want.units);
      CHECK(got[r].sum(0) == want.sum(0));
      CHECK(got[r].loss_sum == Approx(want.loss_sum).epsilon(1e-12));
      CHECK(valid[r].loss_sum == want_valid.loss_sum);     // validation: bit for bit
      CHECK(valid[r].count == want_valid.count);
      CHECK(valid[r].sum(0) == want_valid.sum(0));
    }
    CHECK_THAT(dW[0], test::close_to(one.W.grad, 1e-6));   // one process's gradient, to round-off
    CHECK_THAT(db[0], test::close_to(one.b.grad, 1e-6));
  }
}

TEST_CASE("DataParallel: a task that cannot be sharded is refused on several ranks only", "[unit][dist]") {
  Linear model;
  model.task.single_process_only = "its loss mixes two means";
  dist::SingleProcess one;
  CHECK_NOTHROW(train::DataParallel(one, model.task));
  CHECK_THROWS_WITH(on_ranks(2, [&](dist::Communicator& comm) { train::DataParallel dp(comm, model.task); }),
                    Catch::Contains("trains as one process only, not on 2 ranks: its loss mixes two means"));
}

TEST_CASE("RingAllreduce: rings of several tags, started in any order and advanced together, give allreduce_sum's bits",
          "[unit][dist]") {
  constexpr int N = 3;
  const std::vector<size_t> sizes{5, 1000, 0, 77};
  auto input = [](int rank, size_t k, size_t n) { return values_of(10 * rank + static_cast<int>(k), n); };
  std::vector<std::vector<std::vector<float>>> want(N), got(N);
  on_ranks(N, [&](dist::Communicator& comm) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<float> v = input(comm.rank(), k, sizes[k]);
      dist::allreduce_sum(comm, v);
      want[static_cast<size_t>(comm.rank())].push_back(std::move(v));
    }
  });
  on_ranks(N, [&](dist::Communicator& comm) {
    const int r = comm.rank();
    std::vector<std::vector<float>> v(sizes.size());
    std::vector<std::unique_ptr<dist::RingAllreduce<float>>> rings(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {   // rank r starts buffer r first, and so on
      const size_t k = (i + static_cast<size_t>(r)) % sizes.size();
      v[k] = input(r, k, sizes[k]);
      rings[k] = std::make_unique<dist::RingAllreduce<float>>(comm, v[k], 1 + static_cast<int>(k));
      for (const auto& ring : rings)
        if (ring) ring->progress();
    }
    dist::Waiter waiter(comm);
    for (bool all = false; !all;) {
      all = true;
      for (const auto& ring : rings) all = ring->progress() && all;
      if (!all) waiter.pause((r + 1) % N, (r + N - 1) % N);
    }
    got[static_cast<size_t>(r)] = std::move(v);
  });
  for (size_t r = 0; r < N; ++r)
    for (size_t k = 0; k < sizes.size(); ++k) {
      INFO("rank " << r << ", buffer " << k);
      CHECK(same_bits(got[r][k], want[r][k]));
      CHECK(same_bits(got[r][k], want[0][k]));
    }
}

TEST_CASE("DataParallel: a model that announces its gradients has them summed inside its backward, to the same bits",
          "[unit][dist]") {
  const std::vector<int64_t> batch{4, 11, 0, 19, 7, 2, 15};
  for (const int N : {2, 3}) {
    // (announces, overlap) -> rank 0's gradients, buckets started inside the backward
    std::map<std::pair<bool, bool>, std::pair<std::vector<Tensor>, int64_t>> result;
    for (const bool announces : {false, true})
      for (const bool overlap : {false, true})
        on_ranks(N, [&](dist::Communicator& comm) {
          Linear model;
          model.announces = announces;
          train::DataParallel dp(comm, model.task, /*bucket_floats=*/Linear::kC);   // W and b apart
          dp.set_overlap(overlap);
          zero_grads(model.task.params);
          Rng stream(5);
          dp.train_batch(batch, stream);
          if (comm.rank() == 0) result[{announces, overlap}] = {{model.W.grad.clone(), model.b.grad.clone()}, dp.buckets_overlapped()};
        });
    INFO("N " << N);
    CHECK(result[{true, true}].second == 2);   // both buckets, inside the backward
    CHECK(result[{true, false}].second == 0);
    CHECK(result[{false, true}].second == 0);
    for (const auto& [key, value] : result)
      for (size_t k = 0; k < 2; ++k) CHECK(same_bits(value.first[k].values(), result[{false, false}].first[k].values()));
  }
}

namespace {

constexpr int32_t kWords = 30;

// One data-parallel step of `make_task`'s model on 2 ranks with small buckets: every rank's
// gradients, and how many buckets were started inside the backward.
struct OverlapRun {
  std::vector<std::vector<Tensor>> grads;   // [rank][param]
  int64_t overlapped = 0;
  size_t buckets = 0;
};
template <class Model, class MakeTask>
OverlapRun step_on_two_ranks(const std::function<Model()>& make_model, MakeTask make_task, bool overlap) {
  const data::TokenSplit split = test::reversal_split(12, kWords, 3, 8);
  const data::Vocab vocab = test::word_vocab(kWords);
  const std::vector<int64_t> batch{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  OverlapRun out;
  out.grads.resize(2);
  on_ranks(2, [&](dist::Communicator& comm) {
    Model model = make_model();
    const train::TrainTask task = make_task(model, split, nullptr, vocab, vocab);
    train::DataParallel dp(comm, task, /*bucket_floats=*/2000);
    dp.set_overlap(overlap);
    zero_grads(task.params);
    Rng stream(8);
    dp.train_batch(batch, stream);
    for (const Param* p : task.params) out.grads[static_cast<size_t>(comm.rank())].push_back(p->grad.clone());
    if (comm.rank() == 0) {
      out.overlapped = dp.buckets_overlapped();
      out.buckets = dp.buckets();
    }
  });
  return out;
}

void check_same_gradients(const OverlapRun& on, const OverlapRun& off) {
  REQUIRE(on.grads[0].size() == off.grads[0].size());
  for (size_t r = 0; r < 2; ++r)
    for (size_t k = 0; k < on.grads[0].size(); ++k) {
      INFO("rank " << r << ", parameter " << k);
      CHECK(same_bits(on.grads[r][k].values(), off.grads[0][k].values()));
    }
}

}  // namespace

TEST_CASE("DataParallel: the Transformer's and seq2seq's announcements are right: the overlap keeps every bit",
          "[unit][dist]") {
  // A gradient announced final before its last addition would be sent without it: these models
  // announce sublayer by sublayer (seq2seq: layer by layer), buckets hold one module each, and
  // the embeddings go as rows.
  for (const auto arch :
       {transformer::TransformerArch::encdec, transformer::TransformerArch::lm, transformer::TransformerArch::mlm}) {
    for (const auto tie :
         {transformer::TieEmbeddings::none, transformer::TieEmbeddings::output, transformer::TieEmbeddings::all}) {
      std::function<transformer::Transformer()> make = [&] {
        transformer::TransformerConfig c;
        c.arch = arch;
        c.src_vocab = c.tgt_vocab = kWords;
        c.d_model = 16;
        c.heads = 2;
        c.d_ff = 32;
        c.enc_layers = c.dec_layers = 2;
        c.dropout = 0.1f;
        c.tie_embeddings = tie;
        Rng init(3);
        return transformer::Transformer(c, init);
      };
      // BERT's masking: transformer_task's default, which a function pointer does not carry.
      const auto task = [](transformer::Transformer& m, const data::TokenSplit& train, const data::TokenSplit* valid,
                           const data::Vocab& src,
                           const data::Vocab& tgt) { return transformer::transformer_task(m, train, valid, src, tgt); };
      const OverlapRun on = step_on_two_ranks(make, task, true);
      const OverlapRun off = step_on_two_ranks(make, task, false);
      INFO(transformer::arch_name(arch) << ", tie " << transformer::tie_embeddings_name(tie) << ": " << on.overlapped
                                        << " of " << on.buckets << " buckets inside the backward");
      CHECK(on.overlapped >= static_cast<int64_t>(on.buckets) / 2);
      CHECK(off.overlapped == 0);
      check_same_gradients(on, off);
    }
  }
  for (const bool bidirectional : {false, true}) {
    std::function<seq2seq::Seq2Seq()> make = [&] {
      seq2seq::Seq2SeqConfig c;
      c.src_vocab = c.tgt_vocab = kWords;
      c.embed_dim = 8;
      c.hidden = c.dec_hidden = 12;
      c.layers = 2;
      c.bidirectional = bidirectional;
      c.encoder_self_attention = bidirectional;
      c.attention = nn::ScoreKind::general;
      c.attention_dim = 8;
      c.dropout = 0.1f;
      Rng init(3);
      return seq2seq::Seq2Seq(c, init);
    };
    const OverlapRun on = step_on_two_ranks(make, seq2seq::seq2seq_task, true);
    const OverlapRun off = step_on_two_ranks(make, seq2seq::seq2seq_task, false);
    INFO("seq2seq, bidirectional " << bidirectional << ": " << on.overlapped << " of " << on.buckets << " buckets");
    CHECK(on.overlapped >= static_cast<int64_t>(on.buckets) / 2);
    CHECK(off.overlapped == 0);
    check_same_gradients(on, off);
  }
}

TEST_CASE("DataParallel: a table with sparse_rows sends the rows some rank uses, and gives one process's gradient",
          "[unit][dist]") {
  // Example i adds (i + 1) / 10 to row i mod 7 of a [10, 3] table: rows 7-9 stay zero everywhere.
  // The rows are found by a scan of the table, announced after the gradient is added, or
  // announced before the loss count and again after (as nn::Embedding's forward and backward do:
  // the ranks sum which rows they use while the "backward" runs).
  enum class Rows { scanned, announced, announced_early };
  struct Table {
    Param E{"table", Tensor({10, 3})};
    train::TrainTask task;
    explicit Table(Rows mode) {
      E.sparse_rows = true;
      if (mode == Rows::scanned) E.grad.fill(-0.0f);   // a zero of the other sign must come back as zero, not as a row
      task.kind = "table";
      task.params = {&E};
      task.train_batch = [this, mode](std::span<const int64_t> index, Rng&) {
        const auto n = static_cast<double>(index.size());
        Tensor ids({static_cast<int64_t>(index.size())}, DType::i32);
        for (size_t j = 0; j < index.size(); ++j) ids.idata()[j] = static_cast<int32_t>(index[j] % 7);
        if (mode == Rows::announced_early) {
          nn::announce_rows(E, ids);
          nn::announce_loss_count(n);
        }
        for (const int64_t i : index)
          for (int64_t k = 0; k < 3; ++k) E.grad.data()[(i % 7) * 3 + k] += static_cast<float>((i + 1) / 10.0 / n);
        if (mode != Rows::scanned) nn::announce_rows(E, ids);
        return train::BatchStats{.loss_sum = 0, .count = n, .units = static_cast<int64_t>(index.size()), .sums = {}};
      };
    }
  };
  const std::vector<int64_t> batch{0, 3, 5, 6, 8, 12, 2};
  Table one(Rows::scanned);
  one.E.grad.zero();
  Rng rng(1);
  one.task.train_batch(batch, rng);
  for (const Rows mode : {Rows::scanned, Rows::announced, Rows::announced_early})
    for (const int N : {2, 3}) {
      std::vector<Tensor> grads(static_cast<size_t>(N));
      on_ranks(N, [&](dist::Communicator& comm) {
        Table t(mode);
        train::DataParallel dp(comm, t.task);
        Rng stream(1);
        dp.train_batch(batch, stream);
        grads[static_cast<size_t>(comm.rank())] = t.E.grad.clone();
      });
      INFO("N " << N << ", rows " << static_cast<int>(mode));
      CHECK_THAT(grads[0], test::close_to(one.E.grad, 1e-6));
      for (const Tensor& g : grads) CHECK(same_bits(g.values(), grads[0].values()));
      for (int64_t k = 7 * 3; k < 10 * 3; ++k) CHECK(std::signbit(grads[0].data()[k]) == false);
    }
}

TEST_CASE("DataParallel: a row announced after the loss count, once the ranks sum which rows they use, is an error",
          "[unit][dist]") {
  Param E{"table", Tensor({10, 3})};
  E.sparse_rows = true;
  train::TrainTask task;
  task.kind = "table";
  task.params = {&E};
  task.train_batch = [&E](std::span<const int64_t> index, Rng&) {
    Tensor ids({1}, DType::i32);
    ids.idata()[0] = 1;
    nn::announce_rows(E, ids);
    nn::announce_loss_count(static_cast<double>(index.size()));
    ids.idata()[0] = 4;   // a backward adding to a row its forward did not announce
    nn::announce_rows(E, ids);
    return train::BatchStats{.loss_sum = 0, .count = static_cast<double>(index.size()), .units = 1, .sums = {}};
  };
  std::vector<std::string> errors(2);
  on_ranks(2, [&](dist::Communicator& comm) {
    train::DataParallel dp(comm, task);
    Rng stream(1);
    try {
      dp.train_batch(std::vector<int64_t>{0, 1}, stream);
    } catch (const Error& e) {
      errors[static_cast<size_t>(comm.rank())] = e.what();
    }
  });
  for (const std::string& e : errors) CHECK_THAT(e, Catch::Contains("row 4 of table was announced after the forward"));
}

TEST_CASE("run_split on N ranks: every rank gets one process's tensors and sums, in split order", "[unit][dist]") {
  // Batches of different sizes and trailing lengths, float and int outputs, sums that differ per batch.
  const std::vector<std::vector<int64_t>> batches{{3, 0}, {2}, {1, 4}, {6}, {5, 7}};
  auto run = [](std::span<const int64_t> index) {
    const auto B = static_cast<int64_t>(index.size());
    const int64_t T = 1 + index[0] % 3;
    Tensor x({B, T}), ids({B}, DType::i32);
    for (int64_t b = 0; b < B; ++b) {
      ids.idata()[b] = static_cast<int32_t>(index[static_cast<size_t>(b)]);
      for (int64_t t = 0; t < T; ++t) x.at(b * T + t) = 0.1f * static_cast<float>(index[static_cast<size_t>(b)]) + 0.01f * t;
    }
    return train::BatchOutput{.tensors = {{"x", x}, {"ids", ids}},
                              .sums = {0.1 * static_cast<double>(index[0]), static_cast<double>(B)}};
  };
  dist::SingleProcess one;
  const train::SplitOutput want = train::run_split(8, batches, run, one);
  for (const int N : {2, 3, 8}) {   // 8 ranks: some run no batch
    std::vector<train::SplitOutput> got(static_cast<size_t>(N));
    on_ranks(N, [&](dist::Communicator& comm) { got[static_cast<size_t>(comm.rank())] = train::run_split(8, batches, run, comm); });
    INFO("N " << N);
    for (const train::SplitOutput& g : got) {
      CHECK(g.sums == want.sums);   // the same additions in the same order: equal doubles
      REQUIRE(g.tensors.size() == 2);
      CHECK(same_bits(g.at("x").values(), want.at("x").values()));
      CHECK(g.at("x").shape() == want.at("x").shape());
      CHECK(std::memcmp(g.at("ids").idata(), want.at("ids").idata(), 8 * sizeof(int32_t)) == 0);
    }
  }
}

TEST_CASE("DataParallel: a model of more modules than message tags is planned by size, and still sums right",
          "[unit][dist]") {
  // 5,000 one-float parameters in modules of their own, buckets of 1 float asked for: a bucket per
  // module would need 5,000 tags.
  struct Many {
    std::vector<Param> params;
    train::TrainTask task;
    Many() {
      params.reserve(5000);
      for (int k = 0; k < 5000; ++k) {
        std::string name(1, 'm');   // appended, not concatenated: GCC 12's -Wrestrict
        name += std::to_string(k);
        name += "/w";
        params.emplace_back(name, Tensor({1}));
      }
      for (Param& p : params) task.params.push_back(&p);
      task.kind = "many";
      task.train_batch = [this](std::span<const int64_t> index, Rng&) {
        for (const int64_t i : index)
          for (size_t k = 0; k < params.size(); ++k) params[k].grad.data()[0] += static_cast<float>((i + 1) * (k % 7));
        const auto n = static_cast<double>(index.size());
        for (Param& p : params) p.grad.data()[0] /= static_cast<float>(n);
        return train::BatchStats{.loss_sum = 0, .count = n, .units = static_cast<int64_t>(index.size()), .sums = {}};
      };
    }
  };
  const std::vector<int64_t> batch{0, 1, 2, 3};   // mean of (i + 1) over the batch: 2.5
  std::vector<float> got;
  size_t buckets = 0;
  on_ranks(2, [&](dist::Communicator& comm) {
    Many m;
    train::DataParallel dp(comm, m.task, /*bucket_floats=*/1);
    zero_grads(m.task.params);
    Rng stream(1);
    dp.train_batch(batch, stream);
    if (comm.rank() == 0) {
      buckets = dp.buckets();
      for (const Param& p : m.params) got.push_back(p.grad.data()[0]);
    }
  });
  CHECK(buckets <= static_cast<size_t>(dist::kMaxTag - 1));
  CHECK(buckets >= 1250);   // buckets of a few floats, not one
  REQUIRE(got.size() == 5000);
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(2.5 * static_cast<double>(k % 7)));
}

TEST_CASE("share_rows: consecutive shares of ceil(n / N) rows cover rows 0 to n - 1 in rank order", "[unit][dist]") {
  for (const int N : {1, 2, 3, 8})
    for (const int64_t n : {0, 1, 5, 7, 24}) {
      int64_t next = 0;
      for (int r = 0; r < N; ++r) {
        ThreadGroup group(N);   // no exchange: shares are arithmetic
        const ThreadRank comm(group, r);
        const data::RowShare s = data::share_rows(n, comm);
        INFO("n " << n << " N " << N << " rank " << r);
        CHECK(s.per_rank == (n + N - 1) / N);
        CHECK(s.begin == std::min(next, n));
        CHECK(s.end - s.begin <= s.per_rank);
        next = s.end;
      }
      CHECK(next == n);
    }
}

TEST_CASE("a split opened in the file and its fingerprint: each rank reads its share, every rank gets one "
          "process's result",
          "[unit][dist]") {
  test::TempDir dir;
  constexpr int64_t kRows = 23, kWidth = 6, kVocab = 12;
  Rng rng(5);
  Tensor src({kRows, kWidth}, DType::i32), len({kRows}, DType::i32), seg({kRows, kWidth}, DType::i32);
  for (int64_t i = 0; i < kRows; ++i) {
    len.idata()[i] = static_cast<int32_t>(2 + i % (kWidth - 1));
    for (int64_t t = 0; t < len.idata()[i]; ++t) {
      src.idata()[i * kWidth + t] = static_cast<int32_t>(4 + rng.uniform_int(kVocab - 4));
      seg.idata()[i * kWidth + t] = i % 3 == 0 && t >= 1 ? 1 : 0;   // sentence B on every third row
    }
  }
  auto write = [&](const std::string& name, const Tensor& ids) {
    io::File f = io::File::create(dir.file(name));
    f.write_all("/train/", {{"src", ids}, {"src_len", len}, {"segments", seg}, {"extra", randn({kRows, 5}, rng)}});
    f.commit();
  };
  write("good.h5", src);
  Tensor bad = src.clone();
  bad.idata()[20 * kWidth] = kVocab;   // row 20: in the second half of the rows
  write("bad.h5", bad);
  const data::TokenSplitRequest request{.tgt = false, .src_vocab = kVocab, .segments = true};

  // One process: blocks of 16 values (several per dataset), and the split read into memory.
  dist::SingleProcess one;
  const io::File good = io::File::open_read(dir.file("good.h5"));
  const train::DataFingerprint want = train::fingerprint_data(good, one, 16);
  CHECK(want.train != train::fingerprint_data(good, one).train);   // the block size is part of the value
  const data::TokenSplit memory = data::read_token_split(good, "train", request);
  const std::vector<bool> want_pairs = data::has_sentence_b(memory.segments, memory.src_len, one);
  CHECK(std::count(want_pairs.begin(), want_pairs.end(), true) == 8);

  for (const int N : {2, 3, 8}) {   // 8 ranks: some have no rows and no blocks
    std::vector<train::DataFingerprint> fingerprints(static_cast<size_t>(N));
    std::vector<std::vector<bool>> pairs(static_cast<size_t>(N));
    on_ranks(N, [&](dist::Communicator& comm) {
      const io::File f = io::File::open_read(dir.file("good.h5"));   // each rank its own handle, as in a job
      fingerprints[static_cast<size_t>(comm.rank())] = train::fingerprint_data(f, comm, 16);
      const data::TokenSplit opened = data::open_token_split(f, "train", request, data::KeepData::automatic, comm);
      pairs[static_cast<size_t>(comm.rank())] = data::has_sentence_b(opened.segments, opened.src_len, comm);
    });
    INFO("N " << N);
    for (int r = 0; r < N; ++r) {
      CHECK(fingerprints[static_cast<size_t>(r)].train == want.train);
      CHECK(fingerprints[static_cast<size_t>(r)].vocab == want.vocab);
      CHECK(pairs[static_cast<size_t>(r)] == want_pairs);
    }
  }

  // The bad id of row 20 is in rank 1's share of 2 (rows 12-22): rank 1 finds it, naming the row;
  // rank 0 checks rows 0-11 only, so it opens the split (under mpirun, rank 1's error ends the job).
  std::vector<std::string> errors(2);
  on_ranks(2, [&](dist::Communicator& comm) {
    const io::File f = io::File::open_read(dir.file("bad.h5"));
    try {
      (void)data::open_token_split(f, "train", request, data::KeepData::file, comm);
    } catch (const DataError& e) {
      errors[static_cast<size_t>(comm.rank())] = e.what();
    }
  });
  CHECK(errors[0].empty());
  CHECK_THAT(errors[1], Catch::Contains("row 20"));
  CHECK_THROWS_AS(data::open_token_split(io::File::open_read(dir.file("bad.h5")), "train", request, data::KeepData::file, one),
                  DataError);   // one process checks every row
}
