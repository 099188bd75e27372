// The NTM tasks' sequence layout (lib/data/sequence_data.hpp): a written split reads back the
// same, gather cuts to the selected lengths, and damaged files are refused naming the file,
// dataset and row.
#include "attn/data/sequence_data.hpp"

#include <cmath>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

// Two examples: lengths (2, 1) in, (1, 3) out, values that tell the rows apart.
data::SequenceSplit two_examples() {
  data::SequenceSplit s;
  s.inputs = Tensor::from({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0});
  s.input_len = Tensor::from_ints({2}, {2, 1});
  s.targets = Tensor::from({2, 3, 1}, {1, 0, 0, 0, 1, 1});
  s.target_len = Tensor::from_ints({2}, {1, 3});
  return s;
}

}  // namespace

TEST_CASE("sequence data: write, read back, gather", "[io][sequence_data]") {
  test::TempDir dir;
  {
    io::File f = io::File::create(dir.file("s.h5"));
    data::write_sequence_split(f, "train", two_examples());
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("s.h5"));
  const data::SequenceSplit s = data::read_sequence_split(f, "train");
  CHECK(s.size() == 2);
  CHECK(s.input_width() == 3);
  CHECK(s.output_width() == 1);
  CHECK(s.inputs.all().at(3) == 4.0f);
  // Example 1 alone: one input row, three target rows.
  const int64_t one[] = {1};
  const data::SequenceBatch g = s.gather(one);
  CHECK(g.inputs.shape() == Shape{1, 1, 3});
  CHECK(g.inputs.at(0) == 7.0f);
  CHECK(g.targets.shape() == Shape{1, 3, 1});
  CHECK(g.targets.at(1) == 1.0f);
  CHECK(g.targets.at(2) == 1.0f);
  REQUIRE_THROWS_WITH(data::read_sequence_split(f, "test"), Contains("s.h5: no split '/test' (found: /train)"));
}

TEST_CASE("sequence data: bad lengths, NaN values, targets that are not bits and mismatched rows are refused",
          "[io][sequence_data]") {
  test::TempDir dir;
  auto write = [&](const data::SequenceSplit& s) {
    io::File f = io::File::create(dir.file("bad.h5"));
    data::write_sequence_split(f, "train", s);
    f.commit();
    return io::File::open_read(dir.file("bad.h5"));
  };
  data::SequenceSplit s = two_examples();
  s.inputs.all().at(4) = NAN;
  REQUIRE_THROWS_WITH(data::read_sequence_split(write(s), "train"),
                      Contains("bad.h5: dataset '/train/inputs' row 0 holds nan; every value must be finite"));
  for (const float value : {0.5f, 7.0f, -1.0f}) {   // the targets are bits (binary cross-entropy)
    s = two_examples();
    s.targets.all().at(4) = value;
    REQUIRE_THROWS_WITH(data::read_sequence_split(write(s), "train"),
                        Contains("bad.h5: dataset '/train/targets' row 1 holds " + std::to_string(value) +
                                 "; a target must be a bit, 0 or 1"));
  }
  s = two_examples();
  s.target_len = Tensor::from_ints({2}, {1, 4});
  REQUIRE_THROWS_WITH(data::read_sequence_split(write(s), "train"),
                      Contains("dataset '/train/target_len' row 1 is 4, expected a length in [1, 3]"));
  s = two_examples();
  s.input_len = Tensor::from_ints({3}, {1, 1, 1});
  REQUIRE_THROWS_AS(data::read_sequence_split(write(s), "train"), ShapeError);
}
