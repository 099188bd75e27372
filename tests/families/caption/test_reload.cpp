// Captioner model files read without attnlab (docs/FORMATS.md, "Checking a reader"): the real
// tool trains each model on generated `shapes` images and captions the test split greedily, the
// library reloads the file and computes teacher-forced logits and attention, and
// tests/formats/reload.py, which imports only h5py and numpy, rebuilds the model from the file's
// /config, /params and /buffers with this family's module tests/families/caption/reload.py and
// must reproduce the logits and attention to 1e-4 and `attn-caption caption`'s greedy captions
// (exactly), scores and attention maps. A pair of checkpoints one step apart checks batch
// normalisation's running statistics; coordinates of cell centres, evaluation by the batch's
// statistics, the biased running variance and scores without the EOS must be noticed. The shared
// steps are in tests/support/reload_support.hpp; the case is "formats: ..." in CTest.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/caption/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
using test::batch_file;
using test::case_files;
using test::check_broken;
using test::check_reload;
using test::model_file;
using test::step_file;

namespace {

// Scenes of 11 x 13 pixels: no pooling of 2 or 3 divides both sides. 32 training images, one
// batch of a step (--batch-size 32).
const char* kCaptionData =
    "{data} shapes --height 11 --width 13 --min-size 4 --max-size 5 --n 32 --valid-n 4 --test-n 6 --seed 3 --quiet "
    "--out caption.data.h5";
constexpr int64_t kCaptionMaxLen = 5;   // shorter than most captions: some end with EOS, some are cut

// Trains a captioner with `options` for `steps` Adam steps (so that it captions, and some
// captions end with EOS), captions the test split greedily with attn-caption, and writes the
// batch file: the split's images and captions, the library's teacher-forced logits [B, T, V]
// (decode_step fed BOS, tgt[0], ...) and attention [B, T, L] (evaluate), and attn-caption
// caption's /predictions, /predictions_len, /scores and /attention under /captions.
void caption_case(const test::TempDir& dir, const std::string& name, const std::string& options, int steps) {
  std::string line = "{ test -f caption.data.h5 || ";   // appended piecewise (GCC 12, -Wrestrict)
  line += kCaptionData;
  line += "; } && {cap} train --data caption.data.h5 --model " + model_file(name) + " " + options +
          " --embed-dim 6 --hidden 8 --attention-dim 5 --batch-size 32 --lr 0.03 --seed 2 --threads 1 --quiet"
          " --checkpoint-every 1 --keep-checkpoints 2 --steps " +
          std::to_string(steps);
  line += " && {cap} caption --model " + model_file(name) +
          " --data caption.data.h5 --split test --batch-size 4 "
          "--max-len " +
          std::to_string(kCaptionMaxLen) + " --threads 1 --quiet --out " + name + ".caps.h5";
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{cap}", "attn-caption"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);

  const caption::CaptionerFile m = caption::load_captioner(dir.file(model_file(name)));
  const io::File data = io::File::open_read(dir.file("caption.data.h5"));
  const caption::CaptionSplit split = caption::read_captioner_split(data, "test", m);
  std::vector<int64_t> index(static_cast<size_t>(split.size()));
  std::iota(index.begin(), index.end(), int64_t{0});
  const caption::CaptionBatch batch = caption::gather_caption_batch(split, index);
  const int64_t B = batch.tgt.dim(0), T = batch.tgt.dim(1), V = m.model.config().vocab;
  Tensor attention;
  m.model.evaluate(batch, &attention);
  Tensor logits({B, T, V});
  caption::CaptionerDecoderState state = m.model.start_decoding(batch.images);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int32_t> ids(static_cast<size_t>(B), data::kBos);
    for (int64_t b = 0; t > 0 && b < B; ++b) ids[static_cast<size_t>(b)] = batch.tgt.idata()[b * T + t - 1];
    const Tensor step = m.model.decode_step(Tensor::from_ints({B}, ids), state);
    for (int64_t b = 0; b < B; ++b) std::copy_n(step.data() + b * V, V, logits.data() + (b * T + t) * V);
  }
  const io::File caps = io::File::open_read(dir.file(name + ".caps.h5"));
  io::File f = io::File::create(dir.file(batch_file(name)));
  f.write_all("/", {{"images", batch.images},
                    {"tgt", batch.tgt},
                    {"tgt_len", batch.tgt_len},
                    {"logits", logits},
                    {"attention", attention}});
  for (const char* d : {"predictions", "predictions_len", "scores", "attention"})
    f.write(std::string("/captions/") + d, caps.read(std::string("/") + d));
  f.set_attr("/captions", "max_len", caps.attr_int("/config", "max_len"));
  f.commit();
}

}  // namespace

TEST_CASE("formats: numpy reloads captioners (batch norm, coordinates, mean ablation, grids not a multiple of the "
          "pooling) and reproduces their logits, attention and greedy captions",
          "[integration][formats]") {
  test::TempDir dir;
  // 11 x 13 images: conv4x3,pool2 leaves 5 x 6 (the last row and column dropped), pool3 3 x 4;
  // conv6x2, an even kernel, grows the grid by one (padding 1 on every side).
  caption_case(dir, "cap_bn_coords", "--encoder conv4x3,pool2,conv5x3 --batch-norm --coords", 30);
  caption_case(dir, "cap_plain", "--encoder conv4x3,pool2,conv6x2 --no-gate", 30);
  caption_case(dir, "cap_mean", "--encoder conv4x3,pool3 --attention mean --coords", 30);
  const std::vector<std::string> names = {"cap_bn_coords", "cap_plain", "cap_mean"};
  // Captions that end with EOS (whose score holds its log-probability) and captions cut at --max-len.
  int64_t ended = 0, cut = 0;
  for (const std::string& name : names) {
    const Tensor len = io::File::open_read(dir.file(name + ".caps.h5")).read("/predictions_len");
    for (int64_t i = 0; i < len.numel(); ++i) (len.idata()[i] < kCaptionMaxLen ? ended : cut) += 1;
  }
  CHECK(ended > 0);
  CHECK(cut > 0);
  // The last step's running statistics of batch normalisation, from the checkpoint before it.
  std::vector<std::pair<std::string, std::string>> pairs = case_files(names);
  pairs.emplace_back(step_file("cap_bn_coords", 29), model_file("cap_bn_coords"));
  if (check_reload(dir, pairs).empty()) return;
  for (const char* broken : {"coords-centres", "bn-batch-statistics", "scores-without-eos"})
    check_broken(dir, case_files({"cap_bn_coords"})[0], broken);
  check_broken(dir, pairs.back(), "bn-biased-variance");
}
