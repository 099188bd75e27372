// The image-captioning layout (attn/families/caption/caption_data.hpp): a written split reads back, and
// damaged files are refused naming the file, dataset and row.
#include "attn/families/caption/caption_data.hpp"

#include <cmath>
#include <limits>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

constexpr int64_t kVocab = 8;

struct Split {
  Tensor images = Tensor::full({2, 1, 4, 6}, 0.5f);
  Tensor tgt = Tensor::from_ints({2, 3}, {4, 5, 2, 6, 2, 0});
  Tensor tgt_len = Tensor::from_ints({2}, {3, 2});
  Tensor boxes = Tensor::from_ints({2, 3, 4}, {0, 0, 2, 3, 1, 3, 4, 6, -1, -1, -1, -1,
                                               0, 0, 4, 6, -1, -1, -1, -1, -1, -1, -1, -1});
};

// Writes `s` as /train of dir/c.h5 (without boxes when they are undefined) and opens it.
io::File written(const test::TempDir& dir, const Split& s) {
  {
    io::File f = io::File::create(dir.file("c.h5"));
    f.write_all("/train/", {{"images", s.images}, {"tgt", s.tgt}, {"tgt_len", s.tgt_len}});
    if (s.boxes.defined()) f.write("/train/boxes", s.boxes);
    f.commit();
  }
  return io::File::open_read(dir.file("c.h5"));
}

}  // namespace

TEST_CASE("caption data: write and read back, with and without boxes", "[io][caption_data]") {
  test::TempDir dir;
  Split s;
  const caption::CaptionSplit r = caption::read_caption_split(written(dir, s), "train", kVocab);
  CHECK(r.size() == 2);
  CHECK(r.images.shape() == Shape{2, 1, 4, 6});
  CHECK(r.has_boxes());
  CHECK(r.lengths() == std::vector<int32_t>{3, 2});
  s.boxes = Tensor();
  CHECK_FALSE(caption::read_caption_split(written(dir, s), "train", kVocab).has_boxes());
}

TEST_CASE("caption data: damaged splits are refused with the file, dataset and row", "[io][caption_data]") {
  test::TempDir dir;
  Split s;
  s.images.at(30) = std::numeric_limits<float>::quiet_NaN();
  REQUIRE_THROWS_WITH(caption::read_caption_split(written(dir, s), "train", kVocab),
                      Contains("c.h5") && Contains("'/train/images' image 1 holds a non-finite value"));
  s = Split();
  s.boxes.idata()[4 * 4 + 2] = 5;   // row 1, word 1: y1 = 5 > H = 4
  s.boxes.idata()[4 * 4 + 0] = 0;
  s.boxes.idata()[4 * 4 + 1] = 0;
  s.boxes.idata()[4 * 4 + 3] = 2;
  REQUIRE_THROWS_WITH(caption::read_caption_split(written(dir, s), "train", kVocab),
                      Contains("'/train/boxes' row 1 word 1 is (0, 0, 5, 2)") && Contains("4 x 6 image"));
  s = Split();
  s.images = Tensor::full({3, 1, 4, 6}, 0.0f);
  REQUIRE_THROWS_WITH(caption::read_caption_split(written(dir, s), "train", kVocab),
                      Contains("has 3 images but '/train/tgt' has 2 captions"));
  s = Split();
  s.tgt.idata()[0] = 9;
  REQUIRE_THROWS_WITH(caption::read_caption_split(written(dir, s), "train", kVocab),
                      Contains("holds id 9, outside the vocabulary [0, 8)"));
  s = Split();
  s.boxes = Tensor::from_ints({2, 3, 1}, {0, 0, 0, 0, 0, 0});
  REQUIRE_THROWS_AS(caption::read_caption_split(written(dir, s), "train", kVocab), ShapeError);
}
