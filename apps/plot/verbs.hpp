// The verbs of attn-plot, one function each (argv[0] is the verb), and what they share: the
// input file (first argument or --data), the picture options (--out, --format, --scale,
// --title), index and label parsing, and writing the picture. The verb table is in main.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/plot/inputs.hpp"
#include "attn/plot/picture.hpp"
#include "common/options.hpp"

namespace attn::plot_tool {

inline constexpr const char* kTool = "attn-plot";

int cmd_heatmap(int argc, char** argv);
int cmd_weights(int argc, char** argv);
int cmd_overlay(int argc, char** argv);
int cmd_curve(int argc, char** argv);
int cmd_table(int argc, char** argv);
int cmd_refinement(int argc, char** argv);

// The input file may come first, as in `attn-plot heatmap pred.h5 --dataset ...` (DESIGN.md),
// or as --data FILE. Input takes it off the command line before the options are parsed.
class Input {
 public:
  Input(int argc, char** argv);
  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return args_.data(); }
  // After parse: the file given first or with --data (exactly one of them); ConfigError else, and
  // when --out is the same file (cli::Options::check_input).
  std::string path(const cli::Options& opts) const;
  // After parse: whether an input file was given at all (first or with --data).
  bool given(const cli::Options& opts) const { return !first_.empty() || opts.has("data"); }
  io::File open(const cli::Options& opts) const { return io::File::open_read(path(opts)); }

 private:
  std::vector<char*> args_;
  std::string first_;
};

// --data (optional), --out, --format, --scale, --title. With `text`, --out may also be a text
// table: --format txt, or an --out named .txt (text_output), which may go to a terminal.
void add_picture_options(cli::Options& opts, bool text = false);
// The format of --out (from --format, else its extension); call right after parse so a bad
// name is a usage error before any reading.
plot::Format picture_format(const cli::Options& opts);
// For verbs with a text output (add_picture_options with text): whether --out is text; else
// checks the picture format as picture_format does. Call right after parse.
bool text_output(const cli::Options& opts);
// Writes the picture atomically to --out (a failure is cli::OutputError, exit 1) and prints
// the one-line summary.
void write_picture(const cli::Options& opts, const plot::Picture& pic);
// The same for a text output; `what` describes it in the summary ("3 iterations x 4 positions").
void write_text(const cli::Options& opts, const std::string& text, const std::string& what);

// --index, --layer, --head as a plot::Selection.
void add_selection_options(cli::Options& opts, bool with_heads);
plot::Selection selection(const cli::Options& opts);
// The example row the selection starts with (the first --index value), or -1.
int64_t example_row(const plot::Selection& sel);

// --colormap NAME with the given default.
void add_colormap_option(cli::Options& opts, const std::string& default_map);

// A string option's value, or "" when absent; an optional double likewise.
std::string text(const cli::Options& opts, const std::string& name);
std::optional<double> number(const cli::Options& opts, const std::string& name);

// Labels from --<prefix>-labels (an explicit list) or --<prefix>-ids with --<prefix>-vocab
// (row: the example row); empty when neither is given. Names the flags in errors.
std::vector<std::string> labels_from(const cli::Options& opts, const io::File& file, const std::string& prefix,
                                     int64_t row);

// How many of n rows or columns to draw for `labels`: all n when there are no labels, the
// label count when smaller (the rest is padding), ShapeError "<labels> for <extent>" when larger.
int64_t labelled_extent(const std::vector<std::string>& labels, int64_t n, const std::string& labels_what,
                        const std::string& extent_what);

}  // namespace attn::plot_tool
