// The five charts, rendered from small matrices: sizes, where the data lands (pixel colours read
// back from the PNG), that the picture follows the data, and bad inputs.
#include <cmath>

#include "attn/plot/curve.hpp"
#include "attn/plot/heatmap.hpp"
#include "attn/plot/overlay.hpp"
#include "attn/plot/table.hpp"
#include "attn/plot/weights.hpp"
#include "png_pixels.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::plot;
using test::PngPixels;
using test::Rgb8;
using test::to_rgb8;

namespace {

PngPixels render(const Picture& pic) {
  PngPixels png = PngPixels::decode(pic.encode(Format::png));
  REQUIRE(png.width() == pic.width());
  REQUIRE(png.height() == pic.height());
  return png;
}

// Centre of cell (r, c) of a panel holding a rows x cols grid.
std::pair<double, double> cell_centre(const Rect& p, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  return {p.x + (static_cast<double>(c) + 0.5) * p.w / static_cast<double>(cols),
          p.y + (static_cast<double>(r) + 0.5) * p.h / static_cast<double>(rows)};
}

Rgb8 pixel_at_cell(const PngPixels& png, const Rect& p, int64_t rows, int64_t cols, int64_t r, int64_t c) {
  const auto [x, y] = cell_centre(p, rows, cols, r, c);
  return png.at(x, y);
}

}  // namespace

TEST_CASE("heatmap: the hottest cell is drawn in the top colour where the maximum is", "[unit][heatmap]") {
  // 3 x 4, maximum at (1, 2), minimum at (2, 0).
  Tensor m = Tensor::from({3, 4}, {0.2f, 0.1f, 0.3f, 0.2f,  //
                                   0.4f, 0.5f, 0.9f, 0.3f,  //
                                   0.0f, 0.6f, 0.2f, 0.1f});
  HeatmapOptions opts;
  opts.x_labels = {"ein", "Mann", "schläft", "."};
  opts.y_labels = {"a", "man", "sleeps"};
  opts.title = "cross attention";
  opts.cell = 20;
  const Picture pic = heatmap(m, opts);
  REQUIRE(pic.panels().size() == 1);
  const Rect grid = pic.panels()[0];
  CHECK(grid.w == Approx(80));
  CHECK(grid.h == Approx(60));
  const PngPixels png = render(pic);
  const Rgb8 top = to_rgb8(colormap_at(Colormap::viridis, 1)), bottom = to_rgb8(colormap_at(Colormap::viridis, 0));
  INFO("hottest cell " << test::describe(pixel_at_cell(png, grid, 3, 4, 1, 2)));
  CHECK(test::near(pixel_at_cell(png, grid, 3, 4, 1, 2), top));
  CHECK(test::near(pixel_at_cell(png, grid, 3, 4, 2, 0), bottom));
  CHECK(test::near(pixel_at_cell(png, grid, 3, 4, 1, 1), to_rgb8(colormap_at(Colormap::viridis, 0.5 / 0.9)), 2));
  int hot = 0;   // exactly one cell is the top colour
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) hot += test::near(pixel_at_cell(png, grid, 3, 4, r, c), top);
  CHECK(hot == 1);

  // Moving the maximum moves the hot cell, and the image changes.
  Tensor m2 = m.clone();
  m2.at(1 * 4 + 2) = 0.3f;
  m2.at(0) = 2.0f;
  const Picture pic2 = heatmap(m2, opts);
  const PngPixels png2 = render(pic2);
  CHECK(test::near(pixel_at_cell(png2, grid, 3, 4, 0, 0), top));
  CHECK(!test::near(pixel_at_cell(png2, grid, 3, 4, 1, 2), top));
  CHECK(pic2.encode(Format::png) != pic.encode(Format::png));

  // A fixed colour scale clamps: with vmax 0.5 the 0.5 cell is already the top colour.
  HeatmapOptions fixed = opts;
  fixed.vmin = 0;
  fixed.vmax = 0.5;
  CHECK(test::near(pixel_at_cell(render(heatmap(m, fixed)), grid, 3, 4, 1, 1), top));
}

TEST_CASE("heatmap: sizes, long labels stand upright, grids of heads", "[unit][heatmap]") {
  const Tensor m({4, 5});
  HeatmapOptions opts;
  opts.width = 400;
  opts.height = 300;
  const Picture sized = heatmap(m, opts);
  CHECK(sized.width() == 400);
  CHECK(sized.height() == 300);
  CHECK(render(sized).width() == 400);

  // Long column labels are turned upright, which takes height instead of width.
  HeatmapOptions shorts, longs;
  shorts.cell = longs.cell = 16;
  shorts.x_labels = {"a", "b", "c", "d", "e"};
  longs.x_labels = {"Zusammenarbeit", "b", "c", "d", "e"};
  CHECK(heatmap(m, longs).height() > heatmap(m, shorts).height() + 50);
  CHECK(heatmap(m, longs).width() == heatmap(m, shorts).width());

  // Four heads in two columns: one panel each, laid out left to right, top to bottom.
  Tensor heads({4, 3, 3});
  for (int64_t p = 0; p < 4; ++p) heads.at(p * 9 + p) = 1;   // head p's maximum at flat cell p
  HeatmapOptions grid;
  grid.columns = 2;
  grid.cell = 12;
  const Picture pic = heatmap(heads, grid);
  REQUIRE(pic.panels().size() == 4);
  CHECK(pic.panels()[1].x > pic.panels()[0].right());
  CHECK(pic.panels()[2].y > pic.panels()[0].bottom());
  CHECK(pic.panels()[3].x == pic.panels()[1].x);
  const PngPixels png = render(pic);
  const Rgb8 top = to_rgb8(colormap_at(Colormap::viridis, 1));
  for (int64_t p = 0; p < 4; ++p) CHECK(test::near(pixel_at_cell(png, pic.panels()[p], 3, 3, p / 3, p % 3), top));
}

TEST_CASE("heatmap: bad ranks and label counts", "[unit][heatmap]") {
  REQUIRE_THROWS_WITH(heatmap(Tensor({5})), Catch::Contains("has shape [5], expected rank 2 or 3"));
  REQUIRE_THROWS_AS(heatmap(Tensor({1, 2, 3, 4})), ShapeError);
  HeatmapOptions opts;
  opts.x_labels = {"a", "b", "c"};
  REQUIRE_THROWS_WITH(heatmap(Tensor({2, 4}), opts), Catch::Equals("heatmap: 3 x labels for 4 columns"));
  REQUIRE_THROWS_AS(heatmap(Tensor({2, 4}, DType::i32)), ShapeError);
}

TEST_CASE("weights: time along x, one panel per matrix, each on its own scale", "[unit][weights]") {
  Tensor inputs({6, 4}), memory({6, 10});
  inputs.at(2 * 4 + 3) = 1;       // t = 2, bit 3
  memory.at(4 * 10 + 7) = 0.5f;   // t = 4, location 7: the panel's maximum, so drawn white
  WeightsOptions opts;
  opts.cell = 10;
  const Picture pic = weights({{"inputs", inputs}, {"write weighting", memory}}, opts);
  REQUIRE(pic.panels().size() == 2);
  CHECK(pic.panels()[0].w == Approx(60));
  CHECK(pic.panels()[1].w == Approx(60));
  CHECK(pic.panels()[1].y > pic.panels()[0].bottom());
  const PngPixels png = render(pic);
  const Rgb8 white{255, 255, 255}, black{0, 0, 0};
  CHECK(pixel_at_cell(png, pic.panels()[0], 4, 6, 3, 2) == white);   // rows are bits, columns time
  CHECK(pixel_at_cell(png, pic.panels()[0], 4, 6, 2, 3) == black);
  CHECK(pixel_at_cell(png, pic.panels()[1], 10, 6, 7, 4) == white);
  CHECK(pixel_at_cell(png, pic.panels()[1], 10, 6, 7, 3) == black);

  REQUIRE_THROWS_WITH(weights({{"read", Tensor({6, 2, 10})}}),
                      Catch::Contains("weights: panel 'read' [T, K] has shape [6, 2, 10], expected [*, *]"));
  REQUIRE_THROWS_AS(weights({}), ConfigError);
}

TEST_CASE("overlay: each word's map is upsampled and blended over the image", "[unit][overlay]") {
  const Tensor image = Tensor::full({3, 8, 8}, 0.5f);   // mid grey
  Tensor maps({2, 2, 2});
  maps.at(0) = 1;           // word 0 looks at the top-left quarter
  maps.at(4 + 3) = 0.25f;   // word 1 at the bottom-right (normalised to 1 per word)
  OverlayOptions opts;
  opts.words = {"a", "cat"};
  const Picture pic = overlay(image, maps, opts);
  REQUIRE(pic.panels().size() == 3);   // the image, then one panel per word
  const PngPixels png = render(pic);
  // Gray map, alpha 0.6: attended = 0.4 * 0.5 + 0.6 * 1 = 0.8 (204), ignored = 0.2 (51).
  auto near_corner = [&](const Rect& r, bool right, bool low) {
    return png.at(right ? r.right() - 6 : r.x + 6, low ? r.bottom() - 6 : r.y + 6);
  };
  const Rgb8 lit{204, 204, 204}, dark{51, 51, 51}, plain{128, 128, 128};
  CHECK(test::near(near_corner(pic.panels()[0], false, false), plain));
  CHECK(test::near(near_corner(pic.panels()[1], false, false), lit, 2));
  CHECK(test::near(near_corner(pic.panels()[1], true, true), dark, 2));
  CHECK(test::near(near_corner(pic.panels()[2], true, true), lit, 2));
  CHECK(test::near(near_corner(pic.panels()[2], false, false), dark, 2));

  // A [IH, IW] grey image of bytes works the same; words must match the maps.
  CHECK(overlay(Tensor::full({8, 8}, 128), maps, opts).panels().size() == 3);
  opts.words = {"a"};
  REQUIRE_THROWS_WITH(overlay(image, maps, opts), Catch::Equals("overlay: 1 words for 2 attention maps"));
  REQUIRE_THROWS_WITH(overlay(Tensor({2, 8, 8}), maps), Catch::Contains("expected C = 1 or 3"));
}

TEST_CASE("curve: lines land where their values are, log axes need positive values", "[unit][curve]") {
  // Series 0 is flat at y = 1 across x in [0, 2]; series 1 stays near x = 0. The y range [0, 2]
  // is padded evenly, so y = 1 is the plot's middle row and x = 1 its middle column.
  const Series flat{"flat", {0, 1, 2}, {1, 1, 1}}, side{"side", {0, 0.2}, {0, 2}};
  CurveOptions opts;
  opts.width = 500;
  opts.height = 320;
  const Picture pic = curve({flat, side}, opts);
  CHECK(pic.width() == 500);
  CHECK(pic.height() == 320);
  const Rect plot = pic.panels().at(0);
  const PngPixels png = render(pic);
  const Rgb8 mid = png.at(plot.x + plot.w / 2, plot.y + plot.h / 2);
  INFO("middle of the plot: " << test::describe(mid));
  CHECK(mid.b > 120);   // the first palette colour, blue (0, 114, 178)
  CHECK(mid.r < 100);

  const Series higher{"flat", {0, 1, 2}, {1.6, 1.6, 1.6}};
  const Rgb8 moved = render(curve({higher, side}, opts)).at(plot.x + plot.w / 2, plot.y + plot.h / 2);
  CHECK(!(moved.b > 120 && moved.r < 100));

  CurveOptions log;
  log.log_y = true;
  CHECK(curve({{"", {}, {3, 1, 0.5}}}, log).panels().size() == 1);
  REQUIRE_THROWS_WITH(curve({{"valid", {}, {3, 1, 0}}}, log),
                      Catch::Contains("log y axis needs positive values, but 'valid' has 0.000000 at index 2"));
  REQUIRE_THROWS_WITH(curve({{"a", {1, 2}, {1, 2, 3}}}), Catch::Contains("'a' has 2 x values and 3 y values"));
  REQUIRE_THROWS_AS(curve({{"nan", {}, {NAN}}}), DataError);
}

TEST_CASE("table: cells shaded by value, numbers printed, labels checked", "[unit][table]") {
  const Tensor m = Tensor::from({2, 3}, {0.0f, 0.9f, 0.1f, 0.3f, 0.0f, 0.6f});
  TableOptions opts;
  opts.row_labels = {"Mary went to the kitchen.", "Mary picked up the milk."};
  opts.col_labels = {"hop 1", "hop 2", "hop 3"};
  const Picture pic = table(m, opts);
  const Rect grid = pic.panels().at(0);
  const PngPixels png = render(pic);
  // Sample a corner of each cell (the number is printed in its middle).
  auto corner = [&](int r, int c) { return png.at(grid.x + c * grid.w / 3 + 3, grid.y + r * grid.h / 2 + 3); };
  CHECK(test::near(corner(0, 1), to_rgb8(colormap_at(Colormap::blues, 1))));
  CHECK(test::near(corner(0, 0), to_rgb8(colormap_at(Colormap::blues, 0))));
  CHECK(test::near(corner(1, 2), to_rgb8(colormap_at(Colormap::blues, 0.6 / 0.9)), 2));
  // The printed number darkens (or lightens) the middle of the cell.
  const auto [x, y] = cell_centre(grid, 2, 3, 1, 2);
  bool ink = false;
  for (int dx = -12; dx <= 12; ++dx) ink |= !test::near(png.at(x + dx, y), corner(1, 2), 30);
  CHECK(ink);

  opts.col_labels = {"hop 1"};
  REQUIRE_THROWS_WITH(table(m, opts), Catch::Equals("table: 1 column labels for 3 columns"));
}
