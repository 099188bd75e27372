// The attn-plot executable, run as a user would on a generated output file: every verb renders,
// the picture is the one the library draws for the selected data (byte for byte), errors in
// the input give exit code 3 and write nothing, usage errors exit 2. $ATTN_BIN_DIR is the
// build's apps folder (set by tests/CMakeLists.txt); every file goes to a TempDir.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/plot/curve.hpp"
#include "attn/plot/heatmap.hpp"
#include "attn/plot/inputs.hpp"
#include "attn/plot/weights.hpp"
#include "plot_fixture.hpp"
#include "png_pixels.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

using test::slurp;

using Result = test::ShellResult;

// Runs `attn-plot <args>` in dir (a shell command line: quoting and pipes work).
Result attn_plot(const test::TempDir& dir, const std::string& args, const std::string& stdin_file = "") {
  std::string command = test::quoted_tool("attn-plot") + " " + args;
  if (!stdin_file.empty()) command += " <'" + stdin_file + "'";
  return test::run_shell(dir, command);
}

struct Fixture {
  test::TempDir dir;
  std::string h5 = dir.file("pred.h5");
  Fixture() { test::write_plot_fixture(h5); }
  bool exists(const std::string& name) const { return std::filesystem::exists(dir.file(name)); }
  // Only the fixture and the captured streams: no picture, no temporary file.
  size_t files() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir.path()), {}));
  }
};

}  // namespace

TEST_CASE("attn-plot heatmap draws the selected matrix with its token labels", "[cli][attn-plot]") {
  Fixture fx;
  const Result r = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 1 --head 0 "
                                     "--x-ids /test/src --x-vocab /vocab/src --y-ids /predictions --y-vocab /vocab/tgt "
                                     "--cell 20 --no-colorbar --title 'example 1' --out align.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("attn-plot heatmap: wrote align.png (png, "));
  // Exactly the library's picture of /attention/cross[1, 0] with those labels: the CLI sliced,
  // labelled and cropped (3 target tokens before padding, 4 source tokens) correctly.
  plot::HeatmapOptions ho;
  ho.x_labels = {"ein", "Mann", "schläft", "</s>"};
  ho.y_labels = {"a", "man", "sleeps"};
  ho.cell = 20;
  ho.title = "example 1";
  ho.colorbar = false;
  CHECK(slurp(fx.dir.file("align.png")) == plot::heatmap(test::fixture_cross(1, 0), ho).encode(plot::Format::png));
  // The one hottest cell: 20 x 20 pixels of viridis' top colour (no colour bar to share it).
  const test::PngPixels png = test::PngPixels::load(fx.dir.file("align.png"));
  const test::Rgb8 top = test::to_rgb8(plot::colormap_at(plot::Colormap::viridis, 1));
  int hot = 0;
  for (int y = 0; y < png.height(); ++y)
    for (int x = 0; x < png.width(); ++x) hot += png.at(x, y) == top;
  CHECK(hot == 400);

  // Example 0 has 3 source tokens before padding: the fourth column is cut.
  REQUIRE(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0,1 --x-ids /test/src "
                            "--x-vocab /vocab/src --out ex0.png --quiet").code == 0);
  ho.x_labels = {"ein", "Mann", "</s>"};
  ho.y_labels = {};
  ho.cell = 0;
  ho.title = "";
  ho.colorbar = true;
  CHECK(slurp(fx.dir.file("ex0.png")) == plot::heatmap(plot::crop(test::fixture_cross(0, 1), 3, 3), ho).encode(plot::Format::png));
}

TEST_CASE("attn-plot heatmap: all heads, layers as an axis or as datasets", "[cli][attn-plot]") {
  Fixture fx;
  REQUIRE(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 1 --all-heads --out heads.png --quiet").code == 0);
  Tensor heads({2, 3, 4});
  heads[0].copy_from(test::fixture_cross(1, 0));
  heads[1].copy_from(test::fixture_cross(1, 1));
  CHECK(slurp(fx.dir.file("heads.png")) == plot::heatmap(heads).encode(plot::Format::png));

  // --layer 1 of [N, layers, NH, T, S] is the cross attention plus 10.
  REQUIRE(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/stack --index 0 --layer 1 --head 1 --out l1.png --quiet").code == 0);
  Tensor m = test::fixture_cross(0, 1);
  for (float& v : m.values()) v += 10;
  CHECK(slurp(fx.dir.file("l1.png")) == plot::heatmap(m).encode(plot::Format::png));
  // --layer 1 on a group holding layer1: that dataset.
  REQUIRE(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/layers --layer 1 --index 0 --head 1 --out g1.png --quiet").code == 0);
  for (float& v : m.values()) v -= 9;
  CHECK(slurp(fx.dir.file("g1.png")) == plot::heatmap(m).encode(plot::Format::png));
}

TEST_CASE("attn-plot heatmap: standard input, PDF, a given picture size", "[cli][attn-plot]") {
  Fixture fx;
  // The file from standard input, and a PDF chosen by the extension.
  const Result piped = attn_plot(fx.dir, "heatmap - --dataset /attention/cross --index 0,0 --out m.pdf --quiet", fx.h5);
  INFO(piped.err);
  CHECK(piped.code == 0);
  CHECK(slurp(fx.dir.file("m.pdf")).substr(0, 5) == "%PDF-");
  // --width/--height give the picture's size.
  REQUIRE(attn_plot(fx.dir, "heatmap --data pred.h5 --dataset /attention/cross --index 0,0 --width 500 --height 360 "
                            "--out sized.png --quiet").code == 0);
  const test::PngPixels sized = test::PngPixels::load(fx.dir.file("sized.png"));
  CHECK(sized.width() == 500);
  CHECK(sized.height() == 360);
}

TEST_CASE("attn-plot: bad dataset, rank or index exits 3 and writes nothing", "[cli][attn-plot]") {
  Fixture fx;
  const size_t before = fx.files() + 2;   // + stdout.txt, stderr.txt
  const Result missing = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/nope --out a.png");
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Catch::Contains("pred.h5") && Catch::Contains("/attention/nope"));
  const Result rank = attn_plot(fx.dir, "heatmap pred.h5 --dataset /metrics/train_loss --out a.png");
  CHECK(rank.code == 3);
  CHECK_THAT(rank.err, Catch::Contains("pred.h5: dataset '/metrics/train_loss' has shape [20], expected a matrix [R, C]"));
  const Result index = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 7,0 --out a.png");
  CHECK(index.code == 3);
  CHECK_THAT(index.err, Catch::Contains("has shape [2, 2, 3, 4]; --index value 7 is out of range for axis 0 of size 2"));
  const Result few = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 1 --out a.png");
  CHECK(few.code == 3);
  CHECK_THAT(few.err, Catch::Contains("--index 1 leaves [2, 3, 4], expected a matrix [R, C]"));
  CHECK(!fx.exists("a.png"));
  CHECK(fx.files() == before);
}

TEST_CASE("attn-plot: bad labels, ids, files and panels exit 3 and write nothing", "[cli][attn-plot]") {
  Fixture fx;
  const size_t before = fx.files() + 2;   // + stdout.txt, stderr.txt
  const Result labels = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0,0 --x-labels 'a b c d e' --out a.png");
  CHECK(labels.code == 3);
  CHECK_THAT(labels.err, Catch::Contains("5 x labels for the 4 columns of"));
  const Result vocab = attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 1,0 --x-ids /test/src "
                                         "--x-vocab /vocab/short --out a.png");
  CHECK(vocab.code == 3);
  const Result nofile = attn_plot(fx.dir, "heatmap nothere.h5 --dataset /attention/cross --out a.png");
  CHECK(nofile.code == 3);
  const Result weights = attn_plot(fx.dir, "weights pred.h5 --read /ntm/read --out w.png");
  CHECK(weights.code == 3);
  CHECK_THAT(weights.err, Catch::Contains("'/ntm/read' has shape [1, 6, 2, 10]; no --index leaves [1, 6, 2, 10]"));
  CHECK(!fx.exists("a.png"));
  CHECK(!fx.exists("w.png"));
  CHECK(fx.files() == before);
}

TEST_CASE("attn-plot: usage errors exit 2 and write nothing", "[cli][attn-plot]") {
  Fixture fx;
  CHECK(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0,0 --out a.jpg").code == 2);
  CHECK(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0,0 --colormap jet --out a.png").code == 2);
  CHECK(attn_plot(fx.dir, "heatmap --dataset /attention/cross --out a.png").code == 2);
  CHECK(!fx.exists("a.png"));
}

TEST_CASE("attn-plot: bad flag values and combinations exit 2", "[cli][attn-plot]") {
  Fixture fx;
  CHECK(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index x --out a.png").code == 2);
  CHECK(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0 --head 0 --all-heads --out a.png").code == 2);
  CHECK(attn_plot(fx.dir, "heatmap pred.h5 --dataset /attention/cross --index 0,0 --out -").code == 2);
  CHECK(!fx.exists("a.png"));
}

TEST_CASE("attn-plot: help lists the verbs, and each verb's options with defaults", "[cli][attn-plot]") {
  test::TempDir dir;
  const Result help = attn_plot(dir, "heatmap --help");
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("--colormap viridis|gray|greys|blues (=viridis)") && Catch::Contains("--cell X (=0)"));
  const Result tool_help = attn_plot(dir, "--help");
  for (const char* verb : {"heatmap", "weights", "overlay", "curve", "table", "refinement"})
    CHECK_THAT(tool_help.out, Catch::Contains(std::string("  ") + verb + " "));
}

TEST_CASE("attn-plot weights and overlay render their figures", "[cli][attn-plot]") {
  Fixture fx;
  // weights: inputs, the write weighting, and one panel per read head.
  Result r = attn_plot(fx.dir, "weights pred.h5 --index 0 --inputs /ntm/inputs --write /ntm/write --read /ntm/read "
                               "--cell 10 --out w.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  {
    io::File f = io::File::open_read(fx.h5);
    const Tensor read = f.read("/ntm/read", DType::f32)[0];   // [T, Nr, Nm], Nr = 2
    Tensor h0({6, 10}), h1({6, 10});
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t k = 0; k < 10; ++k) {
        h0.at(t * 10 + k) = read.at((t * 2 + 0) * 10 + k);
        h1.at(t * 10 + k) = read.at((t * 2 + 1) * 10 + k);
      }
    plot::WeightsOptions wo;
    wo.cell = 10;
    const std::vector<plot::WeightsPanel> panels{{"inputs", f.read("/ntm/inputs", DType::f32)[0].clone()},
                                                 {"write weighting", f.read("/ntm/write", DType::f32)[0].clone()},
                                                 {"read weighting (head 0)", h0},
                                                 {"read weighting (head 1)", h1}};
    CHECK(slurp(fx.dir.file("w.png")) == plot::weights(panels, wo).encode(plot::Format::png));
  }

  // overlay: 3 attention steps over a 2 x 2 grid, the third one padding after "a man".
  r = attn_plot(fx.dir, "overlay pred.h5 --index 0 --image /images --attention /visual --word-ids /captions "
                        "--word-vocab /vocab/tgt --out o.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const test::PngPixels o = test::PngPixels::load(fx.dir.file("o.png"));
  CHECK(o.width() == 12 + 3 * 120 + 2 * 10 + 12);   // image + 2 word panels of 120 px, 10 px apart

}

TEST_CASE("attn-plot curve and table render their figures", "[cli][attn-plot]") {
  Fixture fx;
  // curve: a [n] series and an X:Y pair with integer steps, on a log y axis.
  Result r = attn_plot(fx.dir, "curve pred.h5 --series /metrics/train_loss --series /metrics/valid_step:/metrics/valid_loss "
                        "--log-y --y-title loss --width 500 --height 300 --out c.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  {
    plot::CurveOptions co;
    co.y_title = "loss";
    co.log_y = true;
    co.width = 500;
    co.height = 300;
    std::vector<double> train;
    for (int i = 0; i < 20; ++i) train.push_back(static_cast<double>(2.0f / static_cast<float>(i + 1)));
    const std::vector<plot::Series> series{{"train_loss", {}, train},
                                           {"valid_loss", {4, 9, 14, 19}, {0.6f, 0.4f, 0.3f, 0.25f}}};
    CHECK(slurp(fx.dir.file("c.png")) == plot::curve(series, co).encode(plot::Format::png));
  }
  CHECK(attn_plot(fx.dir, "curve pred.h5 --series /metrics/train_loss --label a --label b --out c2.png").code == 2);

  // Series from other files (FILE::SPEC), with or without an input file.
  {
    io::File other = io::File::create(fx.dir.file("other.h5"));
    other.write("/len", Tensor::from_ints({3}, {5, 10, 15}));
    other.write("/bleu", Tensor::from({3}, {30.0f, 25.0f, 20.0f}));
    other.commit();
  }
  r = attn_plot(fx.dir, "curve --series other.h5::/len:/bleu --series other.h5::/bleu --width 500 --height 300 "
                        "--out c3.png --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  {
    plot::CurveOptions co;
    co.width = 500;
    co.height = 300;
    const std::vector<plot::Series> series{{"bleu", {5, 10, 15}, {30, 25, 20}}, {"bleu", {}, {30, 25, 20}}};
    CHECK(slurp(fx.dir.file("c3.png")) == plot::curve(series, co).encode(plot::Format::png));
  }
  CHECK(attn_plot(fx.dir, "curve pred.h5 --series /metrics/train_loss --series other.h5::/len:/bleu --out c4.png").code == 0);
  CHECK(attn_plot(fx.dir, "curve --series /metrics/train_loss --out c5.png").code == 2);   // no file for it
  CHECK(attn_plot(fx.dir, "curve pred.h5 --series ::/bleu --out c5.png").code == 2);
  CHECK(attn_plot(fx.dir, "curve pred.h5 --series missing.h5::/bleu --out c5.png").code == 3);
  CHECK(attn_plot(fx.dir, "curve missing.h5 --series other.h5::/bleu --out c5.png").code == 3);
  CHECK(!fx.exists("c5.png"));

  // table: hop attention [hops, S] turned to sentences by hops; the padding sentence is cut.
  r = attn_plot(fx.dir, "table pred.h5 --dataset /memnet/hops --index 0 --transpose --row-ids /test/story "
                        "--row-vocab /vocab/words --col-labels 'hop 1|hop 2|hop 3' --out t.svg --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string svg = slurp(fx.dir.file("t.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
}

// Issue 51: `attn-plot ... --format png --out run.h5` wrote the picture over its input, exit 0.
// Every verb refuses, through the check every tool's options make (cli::Options), whether the
// input is the first argument or --data and the output the file itself, a symbolic or a hard link.
TEST_CASE("attn-plot: an --out that is the input file, or a link to it, is refused and the file left intact",
          "[cli][attn-plot]") {
  Fixture fx;
  const std::string before = slurp(fx.h5);
  std::filesystem::create_symlink("pred.h5", fx.dir.file("link.h5"));
  std::filesystem::create_hard_link(fx.h5, fx.dir.file("hard.h5"));
  const std::vector<std::pair<std::string, std::string>> verbs{
      {"heatmap", "--dataset /attention/cross --index 0 --head 0"},
      {"weights", "--index 0 --inputs /ntm/inputs --write /ntm/write --read /ntm/read"},
      {"overlay", "--index 0 --image /images --attention /visual"},
      {"curve", "--series /metrics/train_loss"},
      {"table", "--dataset /memnet/hops --index 0"},
      {"refinement", "--index 0"}};
  for (const auto& [verb, args] : verbs) {
    INFO(verb);
    const Result fine = attn_plot(fx.dir, verb + " pred.h5 " + args + " --out fine.png --quiet");
    INFO(fine.err);
    REQUIRE(fine.code == 0);   // the command draws: what follows is refused for its --out alone
    for (const std::string out : {"pred.h5", "link.h5", "hard.h5"})
      for (const std::string& input : {std::string("pred.h5"), std::string("--data pred.h5")}) {
        const Result r = attn_plot(fx.dir, verb + " " + input + " " + args + " --format png --out " + out + " --quiet");
        INFO(input << " --out " << out << ": " << r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--out " + out + " is the same file as " +
                                          (input == "pred.h5" ? "the input file pred.h5" : "--data pred.h5") +
                                          ": writing it would destroy the input; give another --out"));
      }
  }
  // A series read from a file named in --series is an input too.
  const Result series = attn_plot(fx.dir, "curve --series pred.h5::/metrics/train_loss --format png --out link.h5");
  CHECK(series.code == 2);
  CHECK_THAT(series.err, Catch::Contains("--out link.h5 is the same file as --series pred.h5::/metrics/train_loss"));
  CHECK(slurp(fx.h5) == before);
  CHECK(std::filesystem::is_symlink(fx.dir.file("link.h5")));
}
