// Refinement tables of mask-predict: read_refinement on the fixture's /iterations (plot_fixture.hpp)
// and on damaged copies, the text table exactly, the picture's highlighted cells, and the
// attn-plot refinement verb as a user runs it (text, PNG, SVG, PDF; bad input exits 3, bad usage 2).
#include <filesystem>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "attn/plot/refinement.hpp"
#include "plot_fixture.hpp"
#include "png_pixels.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::plot;

namespace {

// The fixture's text tables, with the legend.
const std::string kSentence0 = "iteration  0     1     2\n"
                               "0         [a]   [a]   [sleeps]\n"
                               "1          a    [man]  sleeps\n"
                               "2         [the]  man   sleeps\n"
                               "[token]: re-masked and predicted at that iteration\n";
const std::string kSentence1 = "iteration  0     1     2      3\n"
                               "0         [the] [dog] [dog]  [café]\n"
                               "1          the   dog  [runs] [café]\n"
                               "2          the  [dog]  runs   café\n"
                               "[token]: re-masked and predicted at that iteration\n";

// Runs `attn-plot <args>` in dir (a shell command line).
test::ShellResult attn_plot(const test::TempDir& dir, const std::string& args) {
  return test::run_shell(dir, test::quoted_tool("attn-plot") + " " + args);
}

// A translation file of sentences of 3 tokens ("a man sleeps") with the given /iterations (none
// when `tokens` is empty), to damage one part at a time.
void write_translation(const std::string& path, const Tensor& tokens, const Tensor& masked,
                       const std::string& kind = "translation") {
  io::File f = io::File::create(path);
  io::write_file_info(f, {"attnlab/output", 1, kind, "test", "test"});
  f.write_strings("/vocab/tgt", {"<pad>", "<s>", "</s>", "<unk>", "a", "man", "sleeps"});
  f.write("/predictions", Tensor::from_ints({1, 3}, {4, 5, 6}));
  if (tokens.numel() > 0) f.write("/iterations/tokens", tokens);
  if (masked.numel() > 0) f.write("/iterations/masked", masked);
  f.commit();
}

Tensor ints(const Shape& shape, int32_t value) {
  Tensor t(shape, DType::i32);
  for (int64_t k = 0; k < t.numel(); ++k) t.idata()[k] = value;
  return t;
}

}  // namespace

TEST_CASE("read_refinement: one sentence's tokens after every iteration and its re-predicted positions",
          "[io][refinement]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);

  const Refinement r0 = read_refinement(f, 0);
  CHECK(r0.sentence == 0);
  CHECK(r0.iterations == 3);
  CHECK(r0.length == 3);   // the padding column is cut
  CHECK(r0.tokens == std::vector<std::string>{"a", "a", "sleeps", "a", "man", "sleeps", "the", "man", "sleeps"});
  CHECK(r0.predicted == std::vector<uint8_t>{1, 1, 1, 0, 1, 0, 1, 0, 0});
  const Refinement r1 = read_refinement(f, 1);
  CHECK(r1.length == 4);
  CHECK(r1.token(1, 2) == "runs");
  CHECK(r1.is_predicted(1, 3));
  CHECK(!r1.is_predicted(2, 3));
}

TEST_CASE("read_refinement: bad files name the file and the dataset, expected and found", "[io][refinement]") {
  test::TempDir dir;
  const std::string fixture = dir.file("pred.h5");
  test::write_plot_fixture(fixture);
  {
    const io::File f = io::File::open_read(fixture);
    REQUIRE_THROWS_WITH(read_refinement(f, 2),
                        Catch::Equals(fixture + ": dataset '/iterations/tokens' has shape [2, 3, 4]; --index 2 is out "
                                                "of range for its 2 sentences"));
    REQUIRE_THROWS_AS(read_refinement(f, -1), ShapeError);
    REQUIRE_THROWS_WITH(read_refinement(f, 1, "/vocab/short"),
                        Catch::Equals(fixture + ": id 7 at iteration 0, position 0 of '/iterations/tokens' sentence 1 "
                                                "is outside the vocabulary '/vocab/short' of 5 words"));
  }
  const std::string path = dir.file("t.h5");
  const Tensor tokens = Tensor::from_ints({1, 2, 3}, {4, 4, 6, 4, 5, 6}),
               masked = Tensor::from_ints({1, 2, 3}, {1, 1, 1, 0, 1, 0});
  auto message = [&] {
    const io::File f = io::File::open_read(path);
    try {
      read_refinement(f, 0);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };

  write_translation(path, Tensor(), Tensor());
  CHECK(message() == path + ": no dataset '/iterations/tokens': the translation was not decoded by mask-predict "
                            "(attn-transformer translate writes /iterations for a cmlm model only)");
  std::filesystem::remove(path);
  write_translation(path, Tensor(), Tensor(), "reverse");
  CHECK(message() == path + ": no dataset '/iterations/tokens': the file is a 'reverse' file, not a translation "
                            "(attn-transformer translate writes /iterations for a cmlm model only)");
  std::filesystem::remove(path);
  write_translation(path, tokens, Tensor());
  CHECK(message() == path + ": no dataset '/iterations/masked' beside '/iterations/tokens' [1, 2, 3] (expected int32 "
                            "[1, 2, 3], 1 where a position was re-masked)");
  std::filesystem::remove(path);
  write_translation(path, tokens, ints({1, 2, 4}, 0));
  CHECK(message() == path + ": dataset '/iterations/masked' has shape [1, 2, 4], expected [1, 2, 3], the shape of "
                            "'/iterations/tokens'");
  std::filesystem::remove(path);
  write_translation(path, Tensor::from_ints({2, 3}, {4, 5, 6, 4, 5, 6}), ints({2, 3}, 0));
  CHECK(message() == path + ": dataset '/iterations/tokens' has shape [2, 3], expected [N, I, L] (sentences, "
                            "iterations, positions)");
  std::filesystem::remove(path);
  Tensor two = masked.clone();
  two.idata()[4] = 2;
  write_translation(path, tokens, two);
  CHECK(message() == path + ": dataset '/iterations/masked' sentence 0 holds 2 at iteration 1, position 1, "
                            "expected 0 or 1");
  std::filesystem::remove(path);
  Tensor outside = tokens.clone();
  outside.idata()[1] = 99;
  write_translation(path, outside, masked);
  CHECK(message() == path + ": id 99 at iteration 0, position 1 of '/iterations/tokens' sentence 0 is outside the "
                            "vocabulary '/vocab/tgt' of 7 words");
  std::filesystem::remove(path);
  write_translation(path, ints({1, 2, 3}, 0), masked);
  CHECK(message() == path + ": dataset '/iterations/tokens' sentence 0 is empty (its last iteration holds only "
                            "padding, id 0): nothing to draw");
}

TEST_CASE("refinement_text: aligned columns, re-predicted tokens in brackets", "[unit][refinement]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);
  CHECK(refinement_text(read_refinement(f, 0)) == kSentence0);
  CHECK(refinement_text(read_refinement(f, 1)) == kSentence1);   // "café" is 4 characters wide, not 5 bytes
  RefinementOptions opts;
  opts.title = "sentence 0";
  opts.legend = false;
  CHECK(refinement_text(read_refinement(f, 0), opts) ==
        "sentence 0\n" + kSentence0.substr(0, kSentence0.find("[token]")));

  Refinement bad = read_refinement(f, 0);
  bad.predicted.pop_back();
  REQUIRE_THROWS_WITH(refinement_text(bad), Catch::Equals("refinement_text: 9 tokens and 8 marks for 3 x 3 cells"));
  REQUIRE_THROWS_WITH(refinement_table(Refinement{}),
                      Catch::Equals("refinement_table: sentence 0 has 0 iterations of 0 positions, nothing to draw"));
}

TEST_CASE("refinement_table: re-predicted cells highlighted, the others white", "[unit][refinement]") {
  test::TempDir dir;
  const std::string path = dir.file("pred.h5");
  test::write_plot_fixture(path);
  const io::File f = io::File::open_read(path);
  const Refinement r = read_refinement(f, 1);
  RefinementOptions opts;
  opts.title = "sentence 1";
  const Picture pic = refinement_table(r, opts);
  REQUIRE(pic.panels().size() == 1 + 3 * 4);   // the grid, then every cell
  const test::PngPixels png = test::PngPixels::decode(pic.encode(Format::png));
  CHECK(png.width() == pic.width());
  CHECK(png.height() == pic.height());
  const test::Rgb8 highlight = test::to_rgb8(opts.highlight), white{255, 255, 255};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t l = 0; l < 4; ++l) {
      const Rect& cell = pic.panels()[static_cast<size_t>(1 + i * 4 + l)];
      const test::Rgb8 corner = png.at(cell.x + 3, cell.y + 3);   // the token is written in the middle
      INFO("iteration " << i << ", position " << l << ": " << test::describe(corner));
      CHECK(test::near(corner, r.is_predicted(i, l) ? highlight : white));
    }
  // Columns fit their tokens: "café" and "runs" take more room than "the".
  CHECK(pic.panels()[4].w > pic.panels()[1].w);
  // Without the legend the picture is shorter; other marks give another picture.
  opts.legend = false;
  CHECK(refinement_table(r, opts).height() < pic.height());
  Refinement other = r;
  other.predicted[5] = 1;
  CHECK(refinement_table(other).encode(Format::png) != refinement_table(r).encode(Format::png));
}

TEST_CASE("attn-plot refinement writes the text table, PNG, SVG and PDF", "[cli][attn-plot]") {
  test::TempDir dir;
  test::write_plot_fixture(dir.file("pred.h5"));
  // Text: by extension, or with --format txt to standard output.
  test::ShellResult r = attn_plot(dir, "refinement pred.h5 --index 1 --out r1.txt");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "attn-plot refinement: wrote r1.txt (txt, 3 iterations x 4 positions)\n");
  CHECK(test::slurp(dir.file("r1.txt")) == kSentence1);
  r = attn_plot(dir,
                "refinement --data pred.h5 --index 0 --format txt --title 'sentence 0' --no-legend --out - --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "sentence 0\n" + kSentence0.substr(0, kSentence0.find("[token]")));

  // Pictures: exactly the library's, at the picture's size.
  const io::File f = io::File::open_read(dir.file("pred.h5"));
  const Refinement r1 = read_refinement(f, 1);
  REQUIRE(attn_plot(dir, "refinement pred.h5 --index 1 --out r1.png --quiet").code == 0);
  const std::string png = test::slurp(dir.file("r1.png"));
  CHECK(png == refinement_table(r1).encode(Format::png));
  const test::PngPixels pixels = test::PngPixels::decode(png);
  CHECK(pixels.width() == refinement_table(r1).width());
  CHECK(pixels.height() == refinement_table(r1).height());
  REQUIRE(attn_plot(dir, "refinement pred.h5 --index 1 --scale 2 --out r2.png --quiet").code == 0);
  CHECK(test::PngPixels::load(dir.file("r2.png")).width() == 2 * pixels.width());
  REQUIRE(attn_plot(dir, "refinement pred.h5 --index 1 --out r1.svg --quiet").code == 0);
  const std::string svg = test::slurp(dir.file("r1.svg"));   // cairo numbers its surfaces per process
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("width=\"" + std::to_string(pixels.width()) + "\" height=\"" + std::to_string(pixels.height()) +
                 "\"") != std::string::npos);
  REQUIRE(attn_plot(dir, "refinement pred.h5 --index 1 --format pdf --out r1.out --quiet").code == 0);
  CHECK(test::slurp(dir.file("r1.out")).substr(0, 5) == "%PDF-");
}

TEST_CASE("attn-plot refinement: bad input exits 3, bad usage 2, naming what is wrong, and nothing is written",
          "[cli][attn-plot]") {
  test::TempDir dir;
  test::write_plot_fixture(dir.file("pred.h5"));
  write_translation(dir.file("at.h5"), Tensor(), Tensor());
  write_translation(dir.file("shapes.h5"), Tensor::from_ints({1, 2, 3}, {4, 4, 6, 4, 5, 6}), ints({1, 3, 3}, 0));
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const Case cases[] = {
      {"at.h5 --index 0", 3,
       "attn-plot refinement: at.h5: no dataset '/iterations/tokens': the translation was not decoded by mask-predict"},
      {"pred.h5 --index 2", 3,
       "attn-plot refinement: pred.h5: dataset '/iterations/tokens' has shape [2, 3, 4]; --index 2 is out of range "
       "for its 2 sentences"},
      {"shapes.h5 --index 0", 3,
       "attn-plot refinement: shapes.h5: dataset '/iterations/masked' has shape [1, 3, 3], expected [1, 2, 3], the "
       "shape of '/iterations/tokens'"},
      {"pred.h5 --index 0 --vocab /nope", 3, "/nope"},
      {"missing.h5 --index 0", 3, "missing.h5"},
      {"pred.h5 --index -1", 2, "--index must be >= 0, got -1"},
      {"pred.h5 --index 0,1", 2, "--index"},
      {"pred.h5", 2, "--index"},
      {"pred.h5 --index 0 --format jpg", 2, "--format"},
      {"pred.h5 --index 0 --out-of-place", 2, "out-of-place"},
  };
  for (const Case& c : cases) {
    const test::ShellResult r = attn_plot(dir, "refinement " + c.args + " --out r.png");
    INFO(c.args << ": " << r.err);
    CHECK(r.code == c.code);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
  const test::ShellResult ext = attn_plot(dir, "refinement pred.h5 --index 0 --out r.jpg");
  CHECK(ext.code == 2);
  CHECK_THAT(ext.err, Catch::Contains("cannot tell the format of 'r.jpg': name it .png, .svg, .pdf or .txt"));
  const test::ShellResult stdout_format = attn_plot(dir, "refinement pred.h5 --index 0 --out -");
  CHECK(stdout_format.code == 2);
  CHECK_THAT(stdout_format.err, Catch::Contains("--format png|svg|pdf|txt"));
  // The text table, like every picture, never goes over its input.
  const test::ShellResult over = attn_plot(dir, "refinement pred.h5 --index 0 --format txt --out pred.h5");
  CHECK(over.code == 2);
  CHECK_THAT(over.err, Catch::Contains("--out pred.h5 is the same file as the input file pred.h5"));
  CHECK(read_refinement(io::File::open_read(dir.file("pred.h5")), 0).length == 3);
  // Other verbs have no text table.
  CHECK(attn_plot(dir, "table pred.h5 --dataset /memnet/hops --index 0 --format txt --out t.txt").code == 2);
  for (const char* name : {"r.png", "r.jpg", "t.txt"}) CHECK(!std::filesystem::exists(dir.file(name)));
}
