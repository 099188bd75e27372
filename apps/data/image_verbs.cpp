// attn-data mnist-strips | shapes: image-captioning sets (datasets/mnist_strips.hpp,
// datasets/shapes.hpp; layout in datasets/README.md, "Image captioning").
#include "attn/datasets/mnist_strips.hpp"
#include "attn/datasets/shapes.hpp"
#include "attn/io/hdf5_file.hpp"
#include "verbs.hpp"

namespace attn::data_tool {

namespace po = boost::program_options;
using cli::int_value;

int cmd_mnist_strips(int argc, char** argv) {
  cli::Options opts(kTool, "--data-dir DIR --out FILE [options]",
                    "Image captioning: strips of k handwritten MNIST digits side by side (k from --min-digits\n"
                    "to --max-digits), captioned with the digits' words (\"seven two nine\"); every word\n"
                    "carries the box of its digit's ink. DIR holds t10k-images-idx3-ubyte.gz and\n"
                    "t10k-labels-idx1-ubyte.gz; image i goes to the train pool when i mod 10 < 8, to valid\n"
                    "when it is 8, to test when it is 9. Layout: datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  // clang-format off
  opts.add()
      ("data-dir", po::value<std::string>()->required()->value_name("DIR"),
       "folder of the MNIST test-set IDX files (e.g. ../shared/data/mnist)")
      ("min-digits", int_value(1)->notifier(cli::positive<int64_t>("min-digits")), "fewest digits in a strip")
      ("max-digits", int_value(5)->notifier(cli::positive<int64_t>("max-digits")), "most digits in a strip")
      ("height", int_value(32)->notifier(cli::at_least<int64_t>("height", datasets::kMnistSide)),
       "image height in pixels; each digit's top row is uniform over the free rows")
      ("width", int_value(160)->notifier(cli::positive<int64_t>("width")),
       "image width in pixels; must hold --max-digits digits 28 wide and their gaps")
      ("max-gap", int_value(4)->notifier(cli::at_least<int64_t>("max-gap", 0)),
       "each gap between neighbouring digits' 28 x 28 cells is uniform in 0..this many pixels")
      ("warp-rotate", po::value<double>()->value_name("DEG")->default_value(0, "0")
                          ->notifier(cli::in_range<double>("warp-rotate", 0, 90)),
       "training strips only: rotate each digit by an angle uniform in +-DEG degrees")
      ("warp-scale", po::value<double>()->value_name("X")->default_value(0, "0")
                         ->notifier(cli::in_range<double>("warp-scale", 0, 0.5)),
       "training strips only: scale each digit by a factor uniform in 1 +- X")
      ("warp-shear", po::value<double>()->value_name("X")->default_value(0, "0")
                         ->notifier(cli::in_range<double>("warp-shear", 0, 1)),
       "training strips only: shear each digit (x += s y) by s uniform in +-X; the three warps\n"
       "together make one affine map about the digit's centre, drawn for each digit placed")
      ("warp-shift-y", int_value(0)->notifier(cli::in_range<int64_t>("warp-shift-y", 0, 8)),
       "training strips only: then move each digit up or down in its 28 x 28 cell by a whole number\n"
       "of rows uniform in +-N (the strip's own jitter, 0..height - 28 rows, comes on top)")
      ("warp-elastic", po::value<double>()->value_name("ALPHA")->default_value(0, "0")
                           ->notifier(cli::in_range<double>("warp-elastic", 0, 100)),
       "training strips only: an elastic distortion on top of the affine warp (Simard et al. 2003): "
       "each pixel samples the digit up to a few pixels away, along a random field smoothed by a "
       "Gaussian of --warp-elastic-sigma pixels and scaled by ALPHA (they used 34 with sigma 4)")
      ("warp-elastic-sigma", po::value<double>()->value_name("S")->default_value(4, "4")
                                 ->notifier(cli::in_range<double>("warp-elastic-sigma", 1, 14)),
       "the elastic field's smoothness in pixels: larger is smoother and, for one ALPHA, weaker");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-digits", "min-digits");

  datasets::MnistStripsConfig cfg;
  cfg.min_digits = opts.get<int64_t>("min-digits");
  cfg.max_digits = opts.get<int64_t>("max-digits");
  cfg.height = opts.get<int64_t>("height");
  cfg.width = opts.get<int64_t>("width");
  cfg.max_gap = opts.get<int64_t>("max-gap");
  cfg.train_warp = {static_cast<float>(opts.get<double>("warp-rotate")), static_cast<float>(opts.get<double>("warp-scale")),
                    static_cast<float>(opts.get<double>("warp-shear")), opts.get<int64_t>("warp-shift-y"),
                    static_cast<float>(opts.get<double>("warp-elastic")),
                    static_cast<float>(opts.get<double>("warp-elastic-sigma"))};
  datasets::check_mnist_strips_config(cfg);   // a usage error before any file is read
  const datasets::MnistDigits mnist = datasets::read_mnist(opts.get<std::string>("data-dir"));
  const datasets::SplitSizes sizes = split_sizes(opts);
  const datasets::MnistStrips data = datasets::make_mnist_strips(mnist, cfg, sizes, seed(opts));
  cli::write_output(opts, kDatasetFormat, "mnist-strips",
                    [&](io::File& file) { datasets::write_mnist_strips(file, data); });
  print_written(opts, sizes);
  return 0;
}

int cmd_shapes(int argc, char** argv) {
  cli::Options opts(kTool, "--out FILE [options]",
                    "Image captioning: scenes of two coloured shapes on black (circle, square, triangle;\n"
                    "red, green, blue, yellow) captioned with their relation: \"a red circle above a blue\n"
                    "square\" (above, below, left of, right of). The object whose colour comes first in\n"
                    "the list above (then its shape) is named first, so that a scene has one caption. The\n"
                    "colour and shape words carry their object's box. Layout and the relation rule:\n"
                    "datasets/README.md.");
  add_generator_options(opts, 10000, 1000);
  // clang-format off
  opts.add()
      ("height", int_value(48)->notifier(cli::positive<int64_t>("height")), "image height in pixels")
      ("width", int_value(48)->notifier(cli::positive<int64_t>("width")), "image width in pixels")
      ("min-size", int_value(10)->notifier(cli::at_least<int64_t>("min-size", 4)),
       "smallest object: side of its square, in pixels")
      ("max-size", int_value(18)->notifier(cli::positive<int64_t>("max-size")),
       "largest object; two must fit side by side and one above the other");
  // clang-format on
  if (!opts.parse(argc, argv)) return 0;
  cli::require_at_least(opts, "max-size", "min-size");

  datasets::ShapesConfig cfg;
  cfg.height = opts.get<int64_t>("height");
  cfg.width = opts.get<int64_t>("width");
  cfg.min_size = opts.get<int64_t>("min-size");
  cfg.max_size = opts.get<int64_t>("max-size");
  const datasets::SplitSizes sizes = split_sizes(opts);
  const auto splits = datasets::make_shapes(cfg, sizes, seed(opts));
  cli::write_output(opts, kDatasetFormat, "shapes", [&](io::File& file) { datasets::write_shapes(file, splits); });
  print_written(opts, sizes);
  return 0;
}

}  // namespace attn::data_tool
