// attn-plot overlay: a captioner's attention over its image, one panel per generated word.
#include <cmath>
#include <cstdio>

#include "attn/plot/overlay.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

namespace {

// The grid [h, w] of the R attention locations (L here): --grid HxW, else the factorisation of
// R whose aspect is closest to the image's (7 x 7 for 49 locations over a square image).
std::pair<int64_t, int64_t> location_grid(const cli::Options& opts, int64_t L, int64_t H, int64_t W) {
  if (opts.has("grid")) {
    const std::string g = opts.get<std::string>("grid");
    long long h = 0, w = 0;
    char x = 0, rest = 0;
    if (std::sscanf(g.c_str(), "%lld%c%lld%c", &h, &x, &w, &rest) != 3 || (x != 'x' && x != 'X') || h <= 0 || w <= 0)
      throw ConfigError("--grid must be HxW with positive sizes, e.g. 14x14, got '" + g + "'");
    if (h * w != L)
      throw ShapeError("--grid " + g + " has " + std::to_string(h * w) + " locations, but the attention has " +
                       std::to_string(L));
    return {h, w};
  }
  const double aspect = static_cast<double>(H) / static_cast<double>(W);
  int64_t best = 1;
  for (int64_t h = 1; h <= L; ++h)
    if (L % h == 0 && std::fabs(std::log(static_cast<double>(h * h) / static_cast<double>(L) / aspect)) <
                          std::fabs(std::log(static_cast<double>(best * best) / static_cast<double>(L) / aspect)))
      best = h;
  return {best, L / best};
}

}  // namespace

int cmd_overlay(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "FILE --image PATH --attention PATH [options] --out PICTURE",
                    "Draws where a captioner looked (Xu et al. 2015, Fig. 3): for each generated word, its\n"
                    "attention map upsampled (bilinear) to the image and blended over it. After --index\n"
                    "the image is [C, H, W] (C = 1 or 3) or [H, W] and the attention [T, h, w] or [T, L]\n"
                    "(L locations on an h x w grid, see --grid). Words come from ids and a vocabulary\n"
                    "(--word-ids /captions --word-vocab /vocab/tgt) or a list (--word-labels \"a dog runs\");\n"
                    "steps past the words (padding) are left out.\n"
                    "Example: attn-plot overlay caps.h5 --index 0 --image /test/images --attention /attention\n"
                    "         --word-ids /predictions --word-vocab /vocab/tgt --out looked.png");
  add_picture_options(opts);
  add_selection_options(opts, /*with_heads=*/false);
  // clang-format off
  opts.add()
      ("image", po::value<std::string>()->value_name("PATH")->required(), "images [N, C, H, W] (float)")
      ("attention", po::value<std::string>()->value_name("PATH")->required(),
       "attention maps [N, T, h, w] or [N, T, L] (float)")
      ("grid", po::value<std::string>()->value_name("HxW"),
       "grid of the L locations (default: the factorisation closest to the image's aspect)")
      ("word-ids", po::value<std::string>()->value_name("PATH"), "generated token ids [N, T]")
      ("word-vocab", po::value<std::string>()->value_name("PATH"), "vocabulary of --word-ids")
      ("word-labels", po::value<std::string>()->value_name("LIST"), "the words, separated by spaces (or '|')")
      ("alpha", po::value<double>()->value_name("X")->default_value(0.6, "0.6")->notifier(cli::in_range<double>("alpha", 0, 1)),
       "weight of the attention colour over the image")
      ("global-scale", po::bool_switch(), "scale every map by the largest weight of all (default: each by its own)")
      ("no-image", po::bool_switch(), "leave out the first panel (the image alone)")
      ("panel", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("panel", 0)),
       "longer side of a panel in pixels; 0: the image size, kept within 120-224")
      ("columns", cli::int_value(0)->notifier(cli::at_least<int64_t>("columns", 0)), "panels per row; 0: up to 6");
  // clang-format on
  add_colormap_option(opts, "gray");
  if (!opts.parse(input.argc(), input.argv())) return 0;
  picture_format(opts);
  const plot::Selection sel = selection(opts);

  const io::File file = input.open(opts);
  const std::string image_ds = opts.get<std::string>("image"), att_ds = opts.get<std::string>("attention");
  const auto left = [&](const std::string& ds) {
    return static_cast<int>(file.shape(ds).size()) - static_cast<int>(sel.index.size());
  };
  const Tensor image = plot::read_slice(file, image_ds, sel, left(image_ds) >= 3 ? 3 : 2, "an image [C, H, W] or [H, W]");
  Tensor maps = plot::read_slice(file, att_ds, sel, left(att_ds) == 3 ? 3 : 2, "attention maps [T, h, w] or [T, L]");
  if (maps.rank() == 2) {   // [T, R] -> [T, h, w]
    const auto [h, w] = location_grid(opts, maps.dim(1), image.dim(-2), image.dim(-1));
    maps = maps.reshape({maps.dim(0), h, w});
  }
  plot::OverlayOptions oo;
  oo.words = labels_from(opts, file, "word", example_row(sel));
  const int64_t T = labelled_extent(oo.words, maps.dim(0), "words",
                                    "attention steps of " + file.display_name() + ": '" + att_ds + "' " + to_string(maps.shape()));
  if (T != maps.dim(0)) maps = maps.rows(0, T);
  oo.title = opts.get<std::string>("title");
  oo.colormap = plot::colormap_from_name(opts.get<std::string>("colormap"));
  oo.alpha = opts.get<double>("alpha");
  oo.normalise_each = !opts.get<bool>("global-scale");
  oo.show_image = !opts.get<bool>("no-image");
  oo.panel = opts.get<double>("panel");
  oo.columns = static_cast<int>(opts.get<int64_t>("columns"));
  write_picture(opts, plot::overlay(image, maps, oo));
  return 0;
}

}  // namespace attn::plot_tool
