// The guards of the shared CLI and training layers, through attn-transformer and attn-data as a
// user meets them: an output that is an input or a special file is refused (exit 2) and left
// intact; --resume refuses another data set, a model without optimizer state and non-finite
// parameters (exit 3); eval refuses an empty split (exit 3).
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}, {"{bleu}", "attn-bleu"}});
}

const char* kData = "{data} reverse --vocab 10 --min-len 2 --max-len 6 --n 200 --valid-n 20 --test-n 20 --quiet";
const char* kTiny = "--d-model 16 --heads 2 --d-ff 32 --layers 1 --max-tokens 128 --warmup 4 --lr 0.01 --seed 2 --threads 1 --quiet";

std::string train(const std::string& args) { return "{tf} train " + args + " " + kTiny; }

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

}  // namespace

TEST_CASE("an output that is the same file as an input is refused, naming both options", "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  const std::string before = test::slurp(dir.file("d.h5"));
  std::filesystem::create_symlink("d.h5", dir.file("link.h5"));
  std::filesystem::create_hard_link(dir.file("d.h5"), dir.file("hard.h5"));
  for (const char* model : {"d.h5", "link.h5", "hard.h5"}) {
    const Result r = run(dir, train("--data d.h5 --steps 2 --model " + std::string(model)));
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("--model " + std::string(model) + " is the same file as --data d.h5"));
  }
  CHECK(test::slurp(dir.file("d.h5")) == before);

  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 2")).code == 0);
  const std::string model = test::slurp(dir.file("m.h5"));
  const Result translate = run(dir, "{tf} translate --model m.h5 --data d.h5 --out m.h5 --quiet");
  CHECK(translate.code == 2);
  CHECK_THAT(translate.err, Contains("--out m.h5 is the same file as --model m.h5"));
  const Result bleu = run(dir, "{bleu} --hyp-text d.h5 --ref d.h5 --out d.h5");
  CHECK(bleu.code == 2);
  CHECK_THAT(bleu.err, Contains("--out d.h5 is the same file as"));
  CHECK(test::slurp(dir.file("m.h5")) == model);
  CHECK(test::slurp(dir.file("d.h5")) == before);

  // A checkpoint continued into itself reads and writes the same file on purpose.
  const Result resumed = run(dir, train("--data d.h5 --model m.h5 --steps 4 --resume m.h5"));
  INFO(resumed.err);
  CHECK(resumed.code == 0);
  CHECK(io::File::open_read(dir.file("m.h5")).attr_int("/state", "step") == 4);
}

TEST_CASE("an output path holding a FIFO or a folder is refused, a device streamed to, a link followed",
          "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  const Result fifo = run(dir, std::string(kData) + " --out fifo");
  CHECK(fifo.code == 2);
  CHECK_THAT(fifo.err, Contains("--out fifo: cannot write an output there: it is a FIFO"));
  CHECK(S_ISFIFO(mode_of(dir.file("fifo"))));
  std::filesystem::create_directory(dir.file("folder"));
  const Result folder = run(dir, std::string(kData) + " --out folder");
  CHECK(folder.code == 2);
  CHECK_THAT(folder.err, Contains("it is a folder"));

  // A null device of our own when we may make one (root); otherwise /dev/null itself.
  std::string device = dir.file("null");
  if (::mknod(device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) device = "/dev/null";
  const Result streamed = run(dir, std::string(kData) + " --out " + device);
  INFO(streamed.err);
  CHECK(streamed.code == 0);
  CHECK(S_ISCHR(mode_of(device)));

  REQUIRE(run(dir, std::string(kData) + " --seed 5 --out real.h5").code == 0);
  std::filesystem::create_symlink("real.h5", dir.file("link.h5"));
  REQUIRE(run(dir, std::string(kData) + " --seed 6 --out link.h5").code == 0);
  CHECK(S_ISLNK(mode_of(dir.file("link.h5"))));
  CHECK(io::File::open_read(dir.file("real.h5")).attr_int("/config", "seed") == 6);
}

TEST_CASE("train --resume refuses another data set, and --allow-new-data continues with the same vocabularies",
          "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  REQUIRE(run(dir, std::string(kData) + " --seed 4 --out other.h5").code == 0);   // same sizes and words
  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 3")).code == 0);
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/trained_on", "data") == "d.h5");
    CHECK(m.attr_string("/trained_on", "train_fingerprint").size() == 16);
  }
  const Result refused = run(dir, train("--data other.h5 --model m.h5 --steps 5 --resume"));
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Contains("m.h5: was trained on another training split than the one of 'other.h5'") &&
                              Contains("of 'd.h5'") && Contains("--allow-new-data"));
  CHECK(io::File::open_read(dir.file("m.h5")).attr_int("/state", "step") == 3);   // untouched
  const Result allowed = run(dir, train("--data other.h5 --model m.h5 --steps 5 --resume --allow-new-data"));
  INFO(allowed.err);
  CHECK(allowed.code == 0);
  CHECK(io::File::open_read(dir.file("m.h5")).attr_int("/state", "step") == 5);
  CHECK(run(dir, train("--data d.h5 --model x.h5 --steps 2 --allow-new-data")).code == 2);   // needs --resume

  // A model of an older attnlab, whose train fingerprint was one hash over the whole split (no
  // train_fingerprint_block): it cannot be compared, so it is refused on its own data too.
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    const io::Checkpoint c = io::read_checkpoint(m);
    io::File old = io::File::create(dir.file("old.h5"));
    io::write_checkpoint(old, c);
    for (const char* v : {"/vocab/src", "/vocab/tgt"}) old.write_strings(v, m.read_strings(v));
    for (const char* key : {"data", "vocab_fingerprint", "train_fingerprint"})
      old.set_attr("/trained_on", key, m.attr_string("/trained_on", key));
    old.commit();
  }
  const Result older = run(dir, train("--data other.h5 --model old.h5 --steps 6 --resume old.h5"));
  CHECK(older.code == 3);
  CHECK_THAT(older.err, Contains("old.h5: holds a /train fingerprint that an older attnlab computed another way") &&
                            Contains("--allow-new-data"));
  const Result older_allowed = run(dir, train("--data other.h5 --model old.h5 --steps 6 --resume old.h5 --allow-new-data"));
  INFO(older_allowed.err);
  CHECK(older_allowed.code == 0);

  // Other words, the same number of them: the sizes agree, the vocabularies do not.
  test::write_text(dir.file("a.src"), "a b\nb a\na a\nb b\n");
  test::write_text(dir.file("a.tgt"), "c d\nd c\nc c\nd d\n");
  test::write_text(dir.file("b.src"), "e f\nf e\ne e\nf f\n");
  REQUIRE(run(dir, "{data} parallel --src-file a.src --tgt-file a.tgt --min-freq 1 --valid-n 1 --out pa.h5 --quiet").code == 0);
  REQUIRE(run(dir, "{data} parallel --src-file b.src --tgt-file a.tgt --min-freq 1 --valid-n 1 --out pb.h5 --quiet").code == 0);
  REQUIRE(run(dir, train("--data pa.h5 --model p.h5 --steps 2")).code == 0);
  const Result words = run(dir, train("--data pb.h5 --model p.h5 --steps 3 --resume --allow-new-data"));
  CHECK(words.code == 3);
  CHECK_THAT(words.err, Contains("pb.h5: its vocabulary differs from p.h5's '/vocab/src'"));
}

TEST_CASE("train --resume refuses a model whose /vocab was changed: the same size, two words swapped",
          "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 3")).code == 0);
  {   // the model with its /vocab/tgt edited, everything else (the data's fingerprint included) kept
    const io::File m = io::File::open_read(dir.file("m.h5"));
    io::File edited = io::File::create(dir.file("edited.h5"));
    io::write_checkpoint(edited, io::read_checkpoint(m));
    std::vector<std::string> tgt = m.read_strings("/vocab/tgt");
    std::swap(tgt[4], tgt[5]);
    edited.write_strings("/vocab/src", m.read_strings("/vocab/src"));
    edited.write_strings("/vocab/tgt", tgt);
    for (const char* key : {"data", "vocab_fingerprint", "train_fingerprint"})
      edited.set_attr("/trained_on", key, m.attr_string("/trained_on", key));
    edited.set_attr("/trained_on", "train_fingerprint_block", m.attr_int("/trained_on", "train_fingerprint_block"));
    edited.commit();
  }
  const Result refused = run(dir, train("--data d.h5 --model r.h5 --steps 5 --resume edited.h5"));
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Contains("d.h5: its vocabulary differs from edited.h5's '/vocab/tgt'") &&
                              Contains("trained on another data set"));
  CHECK_FALSE(std::filesystem::exists(dir.file("r.h5")));
  CHECK(run(dir, train("--data d.h5 --model r.h5 --steps 5 --resume m.h5")).code == 0);   // the unedited one
}

TEST_CASE("train --resume from a model without optimizer state needs --reset-optimizer", "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 3")).code == 0);
  REQUIRE(run(dir, "{tf} average --inputs m.h5 m.h5 --out avg.h5 --quiet").code == 0);   // no /optimizer
  const Result refused = run(dir, train("--data d.h5 --model r.h5 --steps 5 --resume avg.h5"));
  CHECK(refused.code == 3);
  CHECK_THAT(refused.err, Contains("avg.h5: holds no /optimizer state") && Contains("--reset-optimizer"));
  CHECK_FALSE(std::filesystem::exists(dir.file("r.h5")));
  const Result reset = run(dir, train("--data d.h5 --model r.h5 --steps 5 --resume avg.h5 --reset-optimizer"));
  INFO(reset.err);
  CHECK(reset.code == 0);
  CHECK(io::File::open_read(dir.file("r.h5")).attr_int("/state", "step") == 5);
}

TEST_CASE("a model holding a NaN parameter is refused by eval and --resume, and eval refuses an empty split",
          "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 3")).code == 0);
  {   // m.h5 with one weight NaN: the checkpoint and the vocabularies the tool reads
    const io::File m = io::File::open_read(dir.file("m.h5"));
    io::Checkpoint c = io::read_checkpoint(m);
    Tensor& w = c.params.begin()->second;
    w.data()[0] = NAN;
    io::File bad = io::File::create(dir.file("bad.h5"));
    io::write_checkpoint(bad, c);
    for (const char* v : {"/vocab/src", "/vocab/tgt"}) bad.write_strings(v, m.read_strings(v));
    bad.commit();
  }
  const Result eval = run(dir, "{tf} eval --model bad.h5 --data d.h5 --quiet");
  CHECK(eval.code == 3);
  CHECK_THAT(eval.err, Contains("bad.h5: parameter '/params/") && Contains("holds nan at element 0"));
  const Result resume = run(dir, train("--data d.h5 --model r.h5 --steps 5 --resume bad.h5"));
  CHECK(resume.code == 3);
  CHECK_THAT(resume.err, Contains("bad.h5: parameter '/params/"));

  // A parallel data set whose test split is empty (--test-n 0 and no test files).
  test::write_text(dir.file("a.src"), "t4 t5\nt5 t4\n");
  test::write_text(dir.file("a.tgt"), "t5 t4\nt4 t5\n");
  REQUIRE(run(dir, "{data} parallel --src-file a.src --tgt-file a.tgt --min-freq 1 --out p.h5 --quiet").code == 0);
  REQUIRE(run(dir, train("--data p.h5 --model pm.h5 --steps 1")).code == 0);
  const Result empty = run(dir, "{tf} eval --model pm.h5 --data p.h5 --split test --quiet");
  CHECK(empty.code == 3);
  CHECK_THAT(empty.err, Contains("p.h5: split '/test' holds no examples"));
}

TEST_CASE("a model whose /config asks for more memory than the machine has is bad input, named, and an option "
          "that does is a usage error",
          "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  REQUIRE(run(dir, train("--data d.h5 --model m.h5 --steps 2")).code == 0);
  {   // m.h5 with d_model and d_ff of 65536, the most a config may hold: 64 GiB per layer's attention
    const io::File m = io::File::open_read(dir.file("m.h5"));
    io::Checkpoint c = io::read_checkpoint(m);
    c.config["d_model"] = int64_t{65536};
    c.config["d_ff"] = int64_t{65536};
    io::File big = io::File::create(dir.file("big.h5"));
    io::write_checkpoint(big, c);
    for (const char* v : {"/vocab/src", "/vocab/tgt"}) big.write_strings(v, m.read_strings(v));
    big.commit();
  }
  for (const std::string& command : {std::string("{tf} eval --model big.h5 --data d.h5 --quiet"),
                                     train("--data d.h5 --model r.h5 --steps 3 --resume big.h5")}) {
    const Result r = run(dir, command);
    INFO(command << "\n" << r.err);
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Contains("out of memory: a float32 tensor [") &&
                          Contains("for the model that big.h5's /config describes"));
  }
  CHECK(!std::filesystem::exists(dir.file("r.h5")));
  // Held to 8 GiB, so that the first [65536, 65536] weight is refused before it is drawn: on this
  // machine's budget it would fit, and drawing its 16 GiB took 100 s before the next one was refused.
  const Result wide =
      run(dir, "ATTN_MEMORY_LIMIT=8G {tf} train --data d.h5 --model w.h5 --steps 1 --d-model 65536 --d-ff 65536 "
               "--heads 1 --quiet");
  INFO(wide.err);
  CHECK(wide.code == 2);
  CHECK_THAT(wide.err, Contains("out of memory: a float32 tensor [") && Contains("for the model the options describe"));
  const Result wider = run(dir, "{tf} train --data d.h5 --model w.h5 --steps 1 --d-model 1073741824 --heads 1 --quiet");
  CHECK(wider.code == 2);
  CHECK_THAT(wider.err, Contains("d_model must be in [1, 65536], got 1073741824"));

  // ATTN_MEMORY_LIMIT holds a run to less than the machine; a limit that is not a size is refused.
  const Result held = run(dir, "ATTN_MEMORY_LIMIT=1M {data} copy --n 100000 --out c.h5 --quiet");
  CHECK(held.code == 2);
  CHECK_THAT(held.err, Contains("a float32 tensor [100000, 21, 9] needs 72.1 MiB, as this command's options ask") &&
                           Contains("of its budget of 1 MiB"));
  CHECK(run(dir, "ATTN_MEMORY_LIMIT=2GiB {data} copy --n 100 --out c.h5 --quiet").code == 0);
  const Result typo = run(dir, "ATTN_MEMORY_LIMIT=lots {data} copy --n 100 --out c2.h5 --quiet");
  CHECK(typo.code == 2);
  CHECK_THAT(typo.err, Contains("ATTN_MEMORY_LIMIT='lots' is not a size"));
}

TEST_CASE("text inputs read standard input as -, and --config is read with a bound and quoted clipped",
          "[cli][guards]") {
  test::TempDir dir;
  test::write_text(dir.file("a.src"), "t4 t5\nt5 t4\n");
  test::write_text(dir.file("a.tgt"), "t5 t4\nt4 t5\n");
  const Result piped = run(dir, "cat a.src | {data} parallel --src-file - --tgt-file a.tgt --min-freq 1 --out p.h5 --quiet");
  INFO(piped.err);
  CHECK(piped.code == 0);
  CHECK(io::File::open_read(dir.file("p.h5")).read_strings("/vocab/src").size() > 4);
  const Result bleu = run(dir, "cat a.tgt | {bleu} --hyp-text - --ref-text a.tgt --quiet");
  INFO(bleu.err);
  CHECK(bleu.code == 0);
  CHECK_THAT(bleu.out, Contains("BLEU = "));

  const Result endless = run(dir, "{data} copy --config /dev/zero --n 5 --out c.h5");
  CHECK(endless.code == 2);
  CHECK_THAT(endless.err, Contains("--config /dev/zero: the file holds more than 1 MiB"));
  test::write_text(dir.file("big.ini"), "seed = " + std::string(100000, '9') + "\n");
  const Result big = run(dir, "{data} copy --config big.ini --n 5 --out c.h5");
  CHECK(big.code == 2);
  CHECK_THAT(big.err, Contains("99999... (100004 characters)") && Contains("for option 'seed' is invalid"));
  CHECK(big.err.size() < 400);
  CHECK(!std::filesystem::exists(dir.file("c.h5")));

  // An endless stream where an HDF5 file should be is refused at once, not read for ever.
  const Result zero_in = run(dir, "{data} info --data - < /dev/zero");
  CHECK(zero_in.code == 3);
  CHECK_THAT(zero_in.err, Contains("stdin: not an HDF5 file (no HDF5 signature in its first MiB)"));
  const Result zero_file = run(dir, "{data} info --data /dev/zero");
  CHECK(zero_file.code == 3);
  CHECK_THAT(zero_file.err, Contains("/dev/zero: not an HDF5 file (no HDF5 signature in its first MiB)"));
}

TEST_CASE("kill -9 during training: every checkpoint loads, no temporary file survives the resume, and the "
          "resumed run ends on the uninterrupted run's bits", "[cli][guards]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --seed 3 --out d.h5").code == 0);
  // A run far longer than needed, killed once its third checkpoint exists (wherever it then is:
  // inside a step or half-way through writing a checkpoint).
  const Result killed = run(dir, "(" + train("--data d.h5 --model m.h5 --steps 100000 --checkpoint-every 1") +
                                     " & pid=$!; while [ ! -e m.step000000003.h5 ]; do sleep 0.02; done; "
                                     "kill -9 $pid; wait $pid; echo killed $?)");
  REQUIRE_THAT(killed.out, Contains("killed 137"));
  int64_t last = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("m.step") || !name.ends_with(".h5")) continue;
    const io::Checkpoint c = io::load_checkpoint(e.path().string(), "transformer");   // complete, or absent
    last = std::max(last, c.step);
  }
  REQUIRE(last >= 3);
  const int64_t steps = last + 4;
  const Result resumed = run(dir, train("--data d.h5 --model m.h5 --checkpoint-every 1 --resume --steps " +
                                        std::to_string(steps)));
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  REQUIRE(run(dir, train("--data d.h5 --model full.h5 --steps " + std::to_string(steps))).code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("m.h5")));
}
