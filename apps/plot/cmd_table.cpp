// attn-plot table: a labelled matrix of numbers with shaded cells, e.g. a memory network's
// attention over the story's sentences at each hop.
#include "attn/plot/table.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

int cmd_table(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "FILE --dataset PATH [options] --out PICTURE",
                    "Prints a 2-D slice of a float dataset as a table: each cell shaded by its value with\n"
                    "the number written in it (Sukhbaatar et al. 2015, Table 2 style). Leading axes are\n"
                    "fixed with --index; --transpose swaps rows and columns (hop attention [hops, S] shown\n"
                    "as sentences by hops). Row labels come from ids [N, S, W] (one sentence per row) or\n"
                    "[N, L] (one token per row) with a vocabulary, or from a list; rows past the labels\n"
                    "(padding sentences) are left out.\n"
                    "Example: attn-plot table answers.h5 --dataset /attention/hops --index 0 --transpose\n"
                    "         --row-ids /test/story --row-vocab /vocab/words --col-labels \"hop 1|hop 2|hop 3\"\n"
                    "         --out hops.png");
  add_picture_options(opts);
  opts.add()("dataset", po::value<std::string>()->value_name("PATH")->required(), "float dataset holding the matrix");
  add_selection_options(opts, /*with_heads=*/true);
  // clang-format off
  opts.add()
      ("transpose", po::bool_switch(), "swap rows and columns")
      ("row-ids", po::value<std::string>()->value_name("PATH"), "token ids of the rows, e.g. /test/story [N, S, W]")
      ("row-vocab", po::value<std::string>()->value_name("PATH"), "vocabulary of --row-ids")
      ("row-labels", po::value<std::string>()->value_name("LIST"), "row labels, separated by spaces (or '|')")
      ("col-ids", po::value<std::string>()->value_name("PATH"), "token ids of the columns")
      ("col-vocab", po::value<std::string>()->value_name("PATH"), "vocabulary of --col-ids")
      ("col-labels", po::value<std::string>()->value_name("LIST"), "column labels, separated by spaces (or '|')")
      ("row-title", po::value<std::string>()->value_name("TEXT")->default_value(""), "header of the label column")
      ("precision", cli::int_value(2)->notifier(cli::in_range<int64_t>("precision", 0, 12)), "decimals printed")
      ("vmin", po::value<double>()->value_name("X"), "value of the lightest shade (default: min(0, minimum))")
      ("vmax", po::value<double>()->value_name("X"), "value of the darkest shade (default: the maximum)");
  // clang-format on
  add_colormap_option(opts, "blues");
  if (!opts.parse(input.argc(), input.argv())) return 0;
  picture_format(opts);
  plot::Selection sel = selection(opts);

  const io::File file = input.open(opts);
  const std::string dataset = opts.get<std::string>("dataset");
  Tensor m = plot::read_slice(file, dataset, sel, 2);
  if (opts.get<bool>("transpose")) {
    const int64_t R = m.dim(0), C = m.dim(1);
    Tensor t({C, R});
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j) t.data()[j * R + i] = m.data()[i * C + j];
    m = t;
  }
  plot::TableOptions to;
  const int64_t row = example_row(sel);
  to.row_labels = labels_from(opts, file, "row", row);
  to.col_labels = labels_from(opts, file, "col", row);
  const std::string extent = "of " + file.display_name() + ": '" + dataset + "' " + sel.describe() + " " + to_string(m.shape());
  const int64_t R = labelled_extent(to.row_labels, m.dim(0), "row labels", "rows " + extent);
  const int64_t C = labelled_extent(to.col_labels, m.dim(1), "column labels", "columns " + extent);
  if (R != m.dim(0) || C != m.dim(1)) m = plot::crop(m, R, C);
  to.title = opts.get<std::string>("title");
  to.row_title = opts.get<std::string>("row-title");
  to.colormap = plot::colormap_from_name(opts.get<std::string>("colormap"));
  to.precision = static_cast<int>(opts.get<int64_t>("precision"));
  to.vmin = number(opts, "vmin");
  to.vmax = number(opts, "vmax");
  write_picture(opts, plot::table(m, to));
  return 0;
}

}  // namespace attn::plot_tool
