#include "attn/core/rng.hpp"

#include <cmath>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("rng: the same seed gives the same stream, another seed another", "[unit][rng]") {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint32_t x = a.next_u32();
    CHECK(x == b.next_u32());
    (void)c;
  }
  Rng d(42), e(43);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += d.next_u32() == e.next_u32();
  CHECK(same < 3);
}

TEST_CASE("rng: state round-trips, so a resumed stream continues exactly", "[unit][rng]") {
  Rng a(7);
  for (int i = 0; i < 13; ++i) a.uniform();
  Rng b(a.state());
  for (int i = 0; i < 50; ++i) CHECK(a.uniform() == b.uniform());
}

TEST_CASE("rng: bulk draws do not depend on the thread count", "[unit][rng]") {
  std::vector<float> one(200000), two(200000);
  set_num_threads(1);
  Rng a(5);
  a.fill_normal(one, 0.0f, 1.0f);
  set_num_threads(2);
  Rng b(5);
  b.fill_normal(two, 0.0f, 1.0f);
  CHECK(one == two);
  CHECK(a.state().counter == b.state().counter);
}

TEST_CASE("rng: fill_uniform draws exactly the stream's values, from any counter", "[unit][rng]") {
  // The bulk path computes whole Philox blocks in batches; element i must still be the value
  // at position counter + i, for every alignment of the counter and every length.
  for (const int skip : {0, 1, 2, 3, 5}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{200003}}) {
      Rng bulk(11), one(11);
      for (int i = 0; i < skip; ++i) {
        bulk.next_u32();
        one.next_u32();
      }
      std::vector<float> got(n);
      bulk.fill_uniform(got, -2.0f, 3.0f);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += got[i] != one.uniform(-2.0f, 3.0f);
      INFO("skip " << skip << ", n " << n);
      CHECK(bad == 0);
      CHECK(bulk.state().counter == one.state().counter);
    }
  }
}

TEST_CASE("rng: uniform and normal have the right moments", "[unit][rng]") {
  Rng rng(1);
  const int n = 100000;
  double su = 0, sn = 0, sn2 = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng.uniform();
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    su += u;
  }
  Tensor z = randn({n}, rng);
  for (int64_t i = 0; i < n; ++i) { sn += z.at(i); sn2 += double(z.at(i)) * z.at(i); }
  CHECK(std::fabs(su / n - 0.5) < 0.01);
  CHECK(std::fabs(sn / n) < 0.02);
  CHECK(std::fabs(sn2 / n - 1.0) < 0.02);
  for (int i = 0; i < 1000; ++i) {
    const int64_t k = rng.uniform_int(7);
    REQUIRE(k >= 0);
    REQUIRE(k < 7);
  }
}

TEST_CASE("rng: a stream drawing nothing leaves bulk draws as they are, and so do its forks", "[unit][rng]") {
  Rng none = Rng::drawing_nothing();
  const Tensor u = rand_uniform({3, 5}, none, -1.0f, 1.0f), n = randn({7}, none);
  for (const float v : u.values()) CHECK(v == 0.0f);
  for (const float v : n.values()) CHECK(v == 0.0f);
  Rng child = none.fork(3);
  std::vector<float> kept(4, 2.5f);
  child.fill_normal(kept, 0.0f, 1.0f);
  CHECK(kept == std::vector<float>(4, 2.5f));
  Rng some(1);   // an ordinary stream still draws
  CHECK(rand_uniform({4}, some, 0.0f, 1.0f).values()[0] != 0.0f);
}
