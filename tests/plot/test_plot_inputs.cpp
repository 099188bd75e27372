// Reading what to draw from HDF5: slicing with --index/--layer/--head semantics, token labels,
// crops and label lists; every bad selection names the file, the dataset and what was asked.
#include "attn/io/hdf5_file.hpp"
#include "attn/plot/inputs.hpp"
#include "plot_fixture.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::plot;

TEST_CASE("read_slice: leading axes fixed by index, head and layer", "[io][plot-inputs]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);

  CHECK_THAT(read_slice(f, "/attention/cross", {{1, 0}, {}, {}}, 2), test::close_to(test::fixture_cross(1, 0), 0));
  CHECK_THAT(read_slice(f, "/attention/cross", {{1}, {}, 1}, 2), test::close_to(test::fixture_cross(1, 1), 0));
  // --layer is axis -4: [N, layers, NH, T, S].
  Tensor want = test::fixture_cross(0, 1);
  for (float& v : want.values()) v += 10;
  CHECK_THAT(read_slice(f, "/attention/stack", {{0}, 1, 1}, 2), test::close_to(want, 0));
  // keep 3: every head of example 1.
  const Tensor heads = read_slice(f, "/attention/cross", {{1}, {}, {}}, 3);
  REQUIRE(heads.shape() == Shape{2, 3, 4});
  CHECK_THAT(heads[1].clone(), test::close_to(test::fixture_cross(1, 1), 0));
  // A rank-2 dataset needs no selection.
  CHECK(read_slice(f, "/memnet/hops", {{0}, {}, {}}, 2).shape() == Shape{3, 5});
}

TEST_CASE("read_slice: bad selections name the file, the dataset, found and expected", "[io][plot-inputs]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);
  const std::string where = path + ": dataset '/attention/cross' has shape [2, 2, 3, 4]";
  REQUIRE_THROWS_WITH(read_slice(f, "/attention/cross", {{1}, {}, {}}, 2),
                      Catch::Equals(where + "; --index 1 leaves [2, 3, 4], expected a matrix [R, C] "
                                            "(fix the leading axes with --index, --head)"));
  REQUIRE_THROWS_WITH(read_slice(f, "/attention/cross", {{5, 0}, {}, {}}, 2),
                      Catch::Equals(where + "; --index value 5 is out of range for axis 0 of size 2"));
  REQUIRE_THROWS_WITH(read_slice(f, "/attention/cross", {{0}, {}, 2}, 2),
                      Catch::Equals(where + "; --head 2 is out of range for axis 1 of size 2"));
  REQUIRE_THROWS_WITH(read_slice(f, "/attention/cross", {{0, 0, 0}, {}, {}}, 2),
                      Catch::Equals(where + "; --index 0,0,0 fixes more leading axes than the 2 before a matrix [R, C]"));
  REQUIRE_THROWS_WITH(read_slice(f, "/memnet/hops", {{0}, 1, {}}, 2),
                      Catch::Contains("has shape [1, 3, 5]: no layer axis to select with --layer 1"));
  REQUIRE_THROWS_WITH(read_slice(f, "/metrics/train_loss", {}, 2),
                      Catch::Equals(path + ": dataset '/metrics/train_loss' has shape [20], expected a matrix [R, C] or more axes"));
  REQUIRE_THROWS_AS(read_slice(f, "/attention/nothing", {}, 2), FormatError);
  REQUIRE_THROWS_AS(read_slice(f, "/test/src", {}, 2), FormatError);   // int32 ids are not a float matrix
}

TEST_CASE("id_labels: tokens up to the padding, sentences joined, ids checked", "[io][plot-inputs]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);
  CHECK(id_labels(f, "/test/src", 1, "/vocab/src") == std::vector<std::string>{"ein", "Mann", "schläft", "</s>"});
  CHECK(id_labels(f, "/test/src", 0, "/vocab/src") == std::vector<std::string>{"ein", "Mann", "</s>"});
  CHECK(id_labels(f, "/test/src", 0, "") == std::vector<std::string>{"4", "5", "2"});
  CHECK(id_labels(f, "/test/story", 0, "/vocab/words") ==
        std::vector<std::string>{"Mary went kitchen", "John went garden", "Mary went garden", "John went kitchen"});
  REQUIRE_THROWS_WITH(id_labels(f, "/test/src", 1, "/vocab/short"),
                      Catch::Equals(path + ": id 5 in '/test/src' row 1 is outside the vocabulary '/vocab/short' of 5 words"));
  REQUIRE_THROWS_WITH(id_labels(f, "/test/src", 2, "/vocab/src"), Catch::Contains("row 2 is out of range for its 2 rows"));
}

TEST_CASE("crop and split_labels", "[unit][plot-inputs]") {
  const Tensor m = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(crop(m, 2, 2), test::close_to(Tensor::from({2, 2}, {1, 2, 4, 5}), 0));
  const Tensor stack = Tensor::from({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(crop(stack, 1, 1), test::close_to(Tensor::from({2, 1, 1}, {1, 4}), 0));
  REQUIRE_THROWS_WITH(crop(m, 3, 1), Catch::Equals("crop: cannot take [3, 1] out of [2, 3]"));
  CHECK(split_labels("ein  Mann schläft") == std::vector<std::string>{"ein", "Mann", "schläft"});
  CHECK(split_labels("Mary went home.|John slept.") == std::vector<std::string>{"Mary went home.", "John slept."});
  CHECK(split_labels("").empty());
}
