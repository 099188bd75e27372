// What every writer must do: refuse an output that is one of its inputs, the file itself or a
// symbolic link to it (README, "Outputs never destroy anything"), before reading or writing
// anything. The writers are found from the tools' own --help (every verb with --out, and every
// --model "to write"), so that a verb added later fails here until it is listed with a command
// line that names an input as its output. The tools are the registry's families' and the others.
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "attn/families/registry.hpp"
#include "test_support.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

// Options that name an existing file as their output; the output is always the last word. In the
// folder: d.h5 (a data set), c.ini (an empty --config file), a.txt and b.txt (text). A verb that
// reads no file of its own names its --config file: it is an input too.
const std::map<std::string, std::string> kWriters = {
    {"attn-data copy", "--config c.ini --out c.ini"},
    {"attn-data repeat-copy", "--config c.ini --out c.ini"},
    {"attn-data assoc-recall", "--config c.ini --out c.ini"},
    {"attn-data priority-sort", "--config c.ini --out c.ini"},
    {"attn-data reverse", "--config c.ini --out c.ini"},
    {"attn-data sort", "--config c.ini --out c.ini"},
    {"attn-data shapes", "--config c.ini --out c.ini"},
    {"attn-data posenc", "--d-model 8 --positions 4 --config c.ini --out c.ini"},
    {"attn-data multi30k", "--data-dir . --config c.ini --out c.ini"},   // its input is a folder
    {"attn-data babi", "--task 1 --data-dir . --config c.ini --out c.ini"},
    {"attn-data mnist-strips", "--data-dir . --config c.ini --out c.ini"},
    {"attn-data parallel", "--src-file a.txt --tgt-file b.txt --out a.txt"},
    {"attn-data distil", "--data d.h5 --translations m.h5 --out m.h5"},
    {"attn-data subword", "--text a.txt b.txt --out b.txt"},
    {"attn-data babi-cls", "--task 1 --data-dir . --vocab-from d.h5 --out d.h5"},
    {"attn-data text", "--in a.txt --out a.txt"},
    {"attn-data pairs", "--src-file a.txt --tgt-file b.txt --out b.txt"},
    {"attn-bleu score", "--hyp-text a.txt --ref d.h5 --out d.h5"},
    {"attn-complexity measure", "--config c.ini --out c.ini"},
    // attn-plot's input comes first, without a flag; --format png, as .h5 names no picture format.
    {"attn-plot heatmap", "d.h5 --dataset /x --format png --out d.h5"},
    {"attn-plot weights", "d.h5 --write /x --format png --out d.h5"},
    {"attn-plot overlay", "d.h5 --image /x --attention /y --format png --out d.h5"},
    {"attn-plot curve", "d.h5 --series /x --format png --out d.h5"},
    {"attn-plot table", "d.h5 --dataset /x --format png --out d.h5"},
    {"attn-plot refinement", "d.h5 --index 0 --format png --out d.h5"},
    {"attn-transformer average", "--inputs d.h5 --out d.h5"},
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The verbs `tool --help` lists under "Verbs:"; {"score"} for attn-bleu, whose one verb may be left out.
std::vector<std::string> verbs_of(const test::TempDir& dir, const std::string& tool) {
  const test::ShellResult help = test::run_shell(dir, test::quoted_tool(tool) + " --help");
  REQUIRE(help.code == 0);
  std::vector<std::string> verbs;
  bool listed = false;
  for (const std::string& line : lines_of(help.out)) {
    if (line == "Verbs:") {
      listed = true;
    } else if (listed && line.empty()) {
      break;
    } else if (listed && line.size() > 2 && line[2] != ' ') {   // "  copy   NTM copy task: ..."
      verbs.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  if (tool == "attn-bleu" && verbs.empty()) verbs.push_back("score");
  return verbs;
}

// The command line that makes a verb write over its input: kWriters', else a family verb's
// (train and finetune write --model, the run verbs --out, each reading --data); "" for a verb that
// writes no file.
std::string writer_args(const std::string& tool, const std::string& verb, const std::string& help) {
  const bool writes_model = has(help, "--model FILE") && has(help, "model to write");
  if (!writes_model && !has(help, "\n  --out ")) return "";
  if (const auto it = kWriters.find(tool + " " + verb); it != kWriters.end()) return it->second;
  if (writes_model && has(help, "--data FILE")) return "--data d.h5 --model d.h5";
  if (has(help, "--model FILE") && has(help, "--data FILE")) return "--model m.h5 --data d.h5 --out d.h5";
  FAIL(tool << " " << verb
            << " writes a file and is not in tests/conformance/test_writers.cpp's list: add a "
               "command line naming one of its inputs as its output");
  return "";
}

}  // namespace

TEST_CASE("writers: every verb that writes a file refuses an output that is one of its inputs, or a link to it",
          "[cli]") {
  test::TempDir dir;
  const test::ShellResult made = test::run_tools(dir, "{data} copy --n 4 --valid-n 2 --test-n 2 --out d.h5 --quiet",
                                                 {{"{data}", "attn-data"}});
  REQUIRE(made.code == 0);
  fs::copy_file(dir.file("d.h5"), dir.file("m.h5"));
  test::write_text(dir.file("c.ini"), "");
  test::write_text(dir.file("a.txt"), "a b c\n");
  test::write_text(dir.file("b.txt"), "d e f\n");
  std::map<std::string, std::string> before;
  for (const char* name : {"d.h5", "m.h5", "c.ini", "a.txt", "b.txt"}) before[name] = test::slurp(dir.file(name));

  std::vector<std::string> tools{"attn-data", "attn-bleu", "attn-complexity", "attn-plot"};
  for (const families::Family& f : families::all()) tools.push_back("attn-" + f.name);
  int writers = 0;
  for (const std::string& tool : tools)
    for (const std::string& verb : verbs_of(dir, tool)) {
      INFO(tool << " " << verb);
      const test::ShellResult help = test::run_shell(dir, test::quoted_tool(tool) + " " + verb + " --help");
      REQUIRE(help.code == 0);
      const std::string args = writer_args(tool, verb, help.out);
      if (args.empty()) continue;
      ++writers;
      const std::string out = args.substr(args.rfind(' ') + 1);
      const std::string link = "link-" + out;
      if (!fs::is_symlink(dir.file(link))) fs::create_symlink(out, dir.file(link));
      for (const std::string& target : {out, link}) {
        const std::string line = verb + " " + args.substr(0, args.rfind(' ') + 1) + target + " --quiet";
        const test::ShellResult r = test::run_shell(dir, test::quoted_tool(tool) + " " + line);
        INFO(line << "\n" << r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains(" " + target + " is the same file as ") &&
                              Catch::Contains(": writing it would destroy the input"));
      }
    }
  CHECK(writers >= static_cast<int>(kWriters.size()));   // every listed verb was found and run
  for (const auto& [name, bytes] : before) {
    INFO(name);
    CHECK(test::slurp(dir.file(name)) == bytes);
  }
}
