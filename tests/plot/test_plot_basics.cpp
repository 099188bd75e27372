// The plot library's building blocks: colour maps, ticks, picture encoding and atomic saving,
// bilinear upsampling.
#include <filesystem>
#include <fstream>

#include "attn/plot/color.hpp"
#include "attn/plot/heatmap.hpp"
#include "attn/plot/overlay.hpp"
#include "attn/plot/picture.hpp"
#include "attn/plot/ticks.hpp"
#include "png_pixels.hpp"
#include "test_support.hpp"

using namespace attn;
using namespace attn::plot;
using test::Rgb8;
using test::to_rgb8;

TEST_CASE("colormap: viridis ends, grey ramps, names", "[unit][plot]") {
  CHECK(to_rgb8(colormap_at(Colormap::viridis, 0)) == Rgb8{68, 1, 84});
  CHECK(to_rgb8(colormap_at(Colormap::viridis, 1)) == Rgb8{253, 231, 37});
  CHECK(to_rgb8(colormap_at(Colormap::viridis, 127.0 / 255)) == Rgb8{33, 144, 141});   // entry 127
  CHECK(to_rgb8(colormap_at(Colormap::viridis, 7)) == Rgb8{253, 231, 37});     // clamped
  CHECK(colormap_at(Colormap::gray, 0.25).g == Approx(0.25));
  CHECK(colormap_at(Colormap::greys, 0.25).g == Approx(0.75));
  CHECK(to_rgb8(colormap_at(Colormap::blues, 1)) == Rgb8{8, 48, 107});
  CHECK(luminance(colormap_at(Colormap::viridis, 0)) < 0.5);
  CHECK(luminance(colormap_at(Colormap::viridis, 1)) > 0.5);
  CHECK(colormap_from_name("gray") == Colormap::gray);
  for (const auto& name : colormap_names()) CHECK(colormap_name(colormap_from_name(name)) == name);
  REQUIRE_THROWS_WITH(colormap_from_name("jet"),
                      Catch::Equals("unknown colour map 'jet' (use viridis, gray, greys or blues)"));
  CHECK(to_rgb8(palette(0)) == Rgb8{0, 114, 178});
  CHECK(to_rgb8(palette(8)) == to_rgb8(palette(0)));
}

TEST_CASE("ticks: round steps inside the range, labels with the needed digits", "[unit][plot]") {
  const Ticks unit = linear_ticks(0, 1, 6);
  CHECK(unit.labels == std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"});
  const Ticks inner = linear_ticks(0.13, 0.87, 5);
  CHECK(inner.labels == std::vector<std::string>{"0.2", "0.4", "0.6", "0.8"});
  const Ticks big = linear_ticks(0, 2000, 5);
  CHECK(big.labels == std::vector<std::string>{"0", "500", "1000", "1500", "2000"});
  CHECK(linear_ticks(-1, 1, 5).labels == std::vector<std::string>{"-1.0", "-0.5", "0.0", "0.5", "1.0"});
  CHECK(linear_ticks(3, 3).values == std::vector<double>{3});
  // A short range off the step's multiples still gets two ticks.
  CHECK(linear_ticks(0.1, 1, 2).labels == std::vector<std::string>{"0.5", "1.0"});
  CHECK(nice_number(0.185, /*round=*/true) == Approx(0.2));
  CHECK(nice_number(3.2, /*round=*/false) == Approx(5));
  CHECK(format_tick(1.5e6, 5e5) == "1.5e+06");
  CHECK(format_tick(3e-5, 1e-5) == "3e-05");

  CHECK(log_ticks(1e-3, 10).labels == std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10"});
  CHECK(log_ticks(0.05, 3).labels == std::vector<std::string>{"0.05", "0.1", "0.2", "0.5", "1", "2"});
  CHECK(log_ticks(1, 1e12, 4).values.size() <= 5);
  REQUIRE_THROWS_AS(log_ticks(0, 1), ConfigError);
}

TEST_CASE("picture: formats from names, encodings, atomic save", "[unit][plot]") {
  CHECK(format_for_path("out/align.PNG") == Format::png);
  CHECK(format_for_path("a.svg") == Format::svg);
  CHECK(format_for_path("a.pdf") == Format::pdf);
  REQUIRE_THROWS_WITH(format_for_path("align.jpg"),
                      Catch::Equals("cannot tell the picture format of 'align.jpg': name it .png, .svg or .pdf"));
  REQUIRE_THROWS_AS(format_for_path("align"), ConfigError);

  const Picture pic = heatmap(Tensor::from({2, 2}, {0, 1, 2, 3}));
  CHECK(pic.encode(Format::png).substr(1, 3) == "PNG");
  CHECK(pic.encode(Format::svg).find("<svg") != std::string::npos);
  CHECK(pic.encode(Format::pdf).substr(0, 5) == "%PDF-");
  const test::PngPixels twice = test::PngPixels::decode(pic.encode(Format::png, 2.0));
  CHECK(twice.width() == 2 * pic.width());
  CHECK(twice.height() == 2 * pic.height());

  test::TempDir dir;
  const std::string path = dir.file("map.png");
  { std::ofstream(path) << "an older file"; }
  pic.save(path);
  const test::PngPixels png = test::PngPixels::load(path);
  CHECK(png.width() == pic.width());
  CHECK(png.height() == pic.height());
  // Nothing but the picture is left in the folder (the temporary file was renamed).
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
  REQUIRE_THROWS_AS(pic.save(dir.file("missing/map.png")), IoError);
  CHECK(!std::filesystem::exists(dir.file("missing")));
}

TEST_CASE("upsample_bilinear: half-pixel centres, clamped borders", "[unit][plot]") {
  const Tensor a = Tensor::from({2, 2}, {0, 1, 2, 3});
  // Source rows/columns of the 4 outputs: -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
  const Tensor want = Tensor::from({4, 4}, {0.0f, 0.25f, 0.75f, 1.0f,     //
                                            0.5f, 0.75f, 1.25f, 1.5f,     //
                                            1.5f, 1.75f, 2.25f, 2.5f,     //
                                            2.0f, 2.25f, 2.75f, 3.0f});
  CHECK_THAT(upsample_bilinear(a, 4, 4), test::close_to(want, 1e-6));
  CHECK_THAT(upsample_bilinear(a, 2, 2), test::close_to(a, 1e-6));
  CHECK_THAT(upsample_bilinear(Tensor::from({1, 1}, {5}), 3, 2), test::close_to(Tensor::full({3, 2}, 5), 1e-6));
  REQUIRE_THROWS_WITH(upsample_bilinear(Tensor({2, 2, 2}), 4, 4),
                      Catch::Contains("upsample_bilinear: a [h, w] has shape [2, 2, 2], expected [*, *]"));
}
