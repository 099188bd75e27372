// attn-plot refinement: mask-predict's output after every iteration for one sentence of a cmlm
// model's translation file, the re-predicted tokens marked (plot/refinement.hpp).
#include "attn/plot/refinement.hpp"
#include "verbs.hpp"

namespace attn::plot_tool {

namespace po = boost::program_options;

int cmd_refinement(int argc, char** argv) {
  Input input(argc, argv);
  cli::Options opts(kTool, "FILE --index I [options] --out PICTURE",
                    "Draws how mask-predict refined one sentence (Ghazvininejad et al. 2019): one row per\n"
                    "iteration, one column per output position, each cell the token after that iteration,\n"
                    "the tokens re-masked and predicted at it highlighted (in text: [in brackets]). Reads a\n"
                    "translation file of a cmlm model (attn-transformer translate): /iterations/tokens and\n"
                    "/iterations/masked [N, I, L], words from --vocab. --out NAME.txt (or --format txt)\n"
                    "writes the table as aligned text; --format txt --out - prints it.\n"
                    "Example: attn-plot refinement nat_pred.h5 --index 3 --out refine.png\n"
                    "         attn-plot refinement nat_pred.h5 --index 3 --format txt --out -");
  add_picture_options(opts, /*text=*/true);
  // clang-format off
  opts.add()
      ("index", po::value<int64_t>()->value_name("I")->required()->notifier(cli::at_least<int64_t>("index", 0)),
       "the sentence: its row of /iterations/tokens [N, I, L] (split order)")
      ("vocab", po::value<std::string>()->value_name("PATH")->default_value("/vocab/tgt"), "vocabulary of the tokens")
      ("no-legend", po::bool_switch(), "leave out the line saying what the marks mean");
  // clang-format on
  if (!opts.parse(input.argc(), input.argv())) return 0;
  const bool as_text = text_output(opts);

  const io::File file = input.open(opts);
  const plot::Refinement r = plot::read_refinement(file, opts.get<int64_t>("index"), opts.get<std::string>("vocab"));
  plot::RefinementOptions ro;
  ro.title = opts.get<std::string>("title");
  ro.legend = !opts.get<bool>("no-legend");
  if (as_text)
    write_text(opts, plot::refinement_text(r, ro),
               std::to_string(r.iterations) + " iterations x " + std::to_string(r.length) + " positions");
  else
    write_picture(opts, plot::refinement_table(r, ro));
  return 0;
}

}  // namespace attn::plot_tool
