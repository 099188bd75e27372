// Tests of the labelled layout (families/transformer/labelled_data.hpp): a round trip, gathering rows, and every
// kind of bad input refused with a message naming the file, the dataset and the row.
#include "attn/families/transformer/labelled_data.hpp"

#include <functional>

#include "attn/core/error.hpp"
#include "attn/data/token_data.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Two rows over a vocabulary of 8 and 3 classes: row 0 a single sentence "4 5 6", row 1 a pair
// "7" | "4 5".
transformer::LabelledSplit two_rows() {
  transformer::LabelledSplit s;
  s.src = Tensor::from_ints({2, 4}, {4, 5, 6, 0, 7, 4, 5, 0});
  s.src_len = Tensor::from_ints({2}, {3, 3});
  s.segments = Tensor::from_ints({2, 4}, {0, 0, 0, 0, 0, 1, 1, 0});
  s.label = Tensor::from_ints({2}, {2, 0});
  return s;
}

// Writes `s` (altered by `spoil`) with 3 labels, and returns the path.
std::string write_set(const test::TempDir& dir, const std::function<void(transformer::LabelledSplit&)>& spoil = {}) {
  transformer::LabelledSplit s = two_rows();
  if (spoil) spoil(s);
  const std::string path = dir.file("set.h5");
  io::File f = io::File::create(path);
  transformer::write_labelled_split(f, "train", s);
  transformer::write_labels(f, {"no", "maybe", "yes"});
  f.commit();
  return path;
}

}  // namespace

TEST_CASE("labelled split: round trip, pairs and gathered rows", "[io][labelled]") {
  test::TempDir dir;
  const io::File f = io::File::open_read(write_set(dir));
  CHECK(transformer::read_labels(f) == std::vector<std::string>{"no", "maybe", "yes"});
  const transformer::LabelledSplit s = transformer::read_labelled_split(f, "train", 8, 3);
  CHECK(f.type_name("/train/segments") == "uint8");
  CHECK(s.size() == 2);
  CHECK(s.has_pairs());
  CHECK(s.segments.all().idata()[5] == 1);
  CHECK(s.label.idata()[0] == 2);
  const std::vector<int64_t> index{0};
  const transformer::LabelledSplit g = transformer::gather_labelled(s, index);
  CHECK(g.src.shape() == Shape{1, 3});
  CHECK(!g.has_pairs());
}

TEST_CASE("labelled split: bad input names the file, the dataset and the row", "[io][labelled]") {
  test::TempDir dir;
  auto refuses = [&](const std::function<void(transformer::LabelledSplit&)>& spoil, const std::string& message) {
    const io::File f = io::File::open_read(write_set(dir, spoil));
    REQUIRE_THROWS_WITH(transformer::read_labelled_split(f, "train", 8, 3),
                        Catch::Contains("set.h5") && Catch::Contains(message));
    std::filesystem::remove(dir.file("set.h5"));
  };
  refuses([](transformer::LabelledSplit& s) { s.label.idata()[1] = 3; },
          "dataset '/train/label' row 1 is 3, outside the classes [0, 3)");
  refuses([](transformer::LabelledSplit& s) { s.src.all().idata()[1] = 8; },
          "dataset '/train/src' row 0 position 1 holds id 8, outside the vocabulary [0, 8)");
  refuses([](transformer::LabelledSplit& s) { s.src_len.idata()[0] = 5; }, "dataset '/train/src_len' row 0 is 5");
  refuses([](transformer::LabelledSplit& s) { s.segments.all().idata()[6] = 0; },
          "dataset '/train/segments' row 1 position 2");
  refuses([](transformer::LabelledSplit& s) { s.segments.all().idata()[3] = 1; },
          "dataset '/train/segments' row 0 position 3");
  refuses([](transformer::LabelledSplit& s) { s.segments.all().idata()[1] = 2; },
          "dataset '/train/segments' row 0 position 1 holds 2");
  refuses([](transformer::LabelledSplit& s) { s.label = Tensor::from_ints({3}, {0, 0, 0}); }, "/train/label");

  const io::File f = io::File::open_read(write_set(dir));
  REQUIRE_THROWS_WITH(transformer::read_labelled_split(f, "valid", 8, 3), Catch::Contains("no split '/valid'"));
}

TEST_CASE("labelled set: fewer than two or repeated class names are refused", "[io][labelled]") {
  test::TempDir dir;
  for (const std::vector<std::string>& labels : {std::vector<std::string>{"one"}, std::vector<std::string>{"a", "b", "a"}}) {
    std::string name = std::to_string(labels.size());
    name += ".h5";
    const std::string path = dir.file(name);
    io::File f = io::File::create(path);
    transformer::write_labels(f, labels);
    f.commit();
    REQUIRE_THROWS_WITH(transformer::read_labels(io::File::open_read(path)),
                        Catch::Contains(path) && Catch::Contains("'/labels'"));
  }
}

TEST_CASE("a labelled split read as language-model text: A [SEP] B EOS, segments for a masked LM", "[io][labelled]") {
  test::TempDir dir;
  const io::File f = io::File::open_read(write_set(dir));
  const data::TokenSplit lm = data::read_token_split(f, "train", {.src = false, .tgt = true, .src_vocab = 0,
                                                                  .tgt_vocab = 8, .segments = false});
  CHECK(lm.tgt.shape() == Shape{2, 5});
  CHECK(std::vector<int32_t>(lm.tgt.all().idata(), lm.tgt.all().idata() + 10) == std::vector<int32_t>{4, 5, 6, 2, 0, 7, 2, 4, 5, 2});
  CHECK(std::vector<int32_t>(lm.tgt_len.idata(), lm.tgt_len.idata() + 2) == std::vector<int32_t>{4, 5});
  const data::TokenSplit mlm = data::read_token_split(f, "train", {.src = true, .tgt = false, .src_vocab = 8,
                                                                   .tgt_vocab = 0, .segments = true});
  CHECK(mlm.segments.shape() == Shape{2, 4});
  CHECK(mlm.segments.all().idata()[5] == 1);
}
