// attn-data posenc: prints the sinusoidal positional-encoding table of Vaswani et al. 2017,
// PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), one row per
// position, and with --out also stores it as the float32 dataset /posenc [positions, d_model].
#include <cmath>
#include <cstdio>
#include <iostream>

#include "attn/nn/positional_encoding.hpp"
#include "verbs.hpp"

namespace attn::data_tool {

int cmd_posenc(int argc, char** argv) {
  cli::Options opts(kTool, "--d-model D --positions P [--out FILE]",
                    "Prints the sinusoidal positional encoding PE[pos, :] for pos = 0 .. P-1,\n"
                    "one row per line (5 decimals, truncated), and with --out stores it as /posenc.");
  // clang-format off
  opts.add()
      ("d-model", cli::int_value(4)->notifier(cli::positive<int64_t>("d-model")), "model width d")
      ("positions", cli::int_value(2)->notifier(cli::positive<int64_t>("positions")), "number of positions P");
  // clang-format on
  opts.add()("out", cli::po::value<std::string>()->value_name("FILE"), "also write the table to this HDF5 file; - writes it to standard output");
  opts.no_config_echo();
  if (!opts.parse(argc, argv)) return 0;

  const Tensor table = nn::sinusoidal_encoding(opts.get<int64_t>("positions"), opts.get<int64_t>("d-model"));
  if (opts.has("out")) {
    cli::write_output(opts, kDatasetFormat, "posenc", [&](io::File& file) { file.write("/posenc", table); });
    if (opts.get<std::string>("out") == "-") return 0;   // stdout holds the file image
  }
  // Printed from the double-precision values, truncated (not rounded) to 5 decimals, so that
  // every printed digit is a true digit of PE: sin(0.01) = 0.0099998 prints as 0.00999.
  const int64_t d = table.dim(1);
  for (int64_t pos = 0; pos < table.dim(0); ++pos) {
    for (int64_t j = 0; j < d; ++j) {
      const double v = std::trunc(nn::sinusoidal_value(pos, j, d) * 1e5) / 1e5;
      std::printf(j ? " %.5f" : "%.5f", v == 0.0 ? 0.0 : v);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace attn::data_tool
