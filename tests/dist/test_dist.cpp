// The collectives of lib/dist and the data-parallel step of train/data_parallel, on N ranks that
// are threads of this process: ThreadRanks, a Communicator whose exchange passes byte vectors
// through mailboxes. The algorithms only see Communicator::exchange, so this tests the very code
// an MPI job runs, without a launcher.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "attn/dist/communicator.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/linear.hpp"
#include "attn/train/data_parallel.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Mailboxes between N threads: box (from, to) holds the messages from `from` to `to` in order.
class ThreadGroup {
 public:
  explicit ThreadGroup(int n) : n_(n), boxes_(static_cast<size_t>(n * n)) {}
  int size() const { return n_; }
  void post(int from, int to, std::span<const std::byte> data) {
    Box& b = box(from, to);
    {
      const std::lock_guard lock(b.m);
      b.q.emplace_back(data.begin(), data.end());
    }
    b.cv.notify_one();
  }
  std::vector<std::byte> take(int from, int to) {
    Box& b = box(from, to);
    std::unique_lock lock(b.m);
    if (!b.cv.wait_for(lock, std::chrono::seconds(20), [&] { return !b.q.empty(); }))
      throw Error("ThreadGroup: rank " + std::to_string(to) + " got nothing from rank " + std::to_string(from));
    std::vector<std::byte> out = std::move(b.q.front());
    b.q.pop_front();
    return out;
  }

 private:
  struct Box {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::vector<std::byte>> q;
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
  void exchange(int to, std::span<const std::byte> send, int from, std::span<std::byte> recv) override {
    group_.post(rank_, to, send);
    const std::vector<std::byte> got = group_.take(from, rank_);
    if (got.size() != recv.size()) throw Error("ThreadRank: message of the wrong size");
    if (!got.empty()) std::memcpy(recv.data(), got.data(), got.size());
    traffic_.bytes_sent += static_cast<int64_t>(send.size());
  }

 private:
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
    if (backward) ops::linear_backward(ops::cross_entropy_backward(1.0f, ce), W.value, lin, W.grad, b.grad);
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
