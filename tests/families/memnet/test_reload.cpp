// Memory network model files read without attnlab (docs/FORMATS.md, "Checking a reader"): the
// real tool trains each model a few steps on a small random bAbI-layout data set, the library
// reloads the file and answers the test split, and tests/formats/reload.py, which imports only
// h5py and numpy, rebuilds the model from the file's /config and /params with this family's
// module tests/families/memnet/reload.py and must reproduce every hop's attention to 1e-4 and the
// predicted answers exactly, for every encoding and tying. The shared steps are in
// tests/support/reload_support.hpp; the case is "formats: ..." in CTest.
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/families/memnet/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
using test::batch_file;
using test::check_reload;
using test::model_file;

namespace {

// A small random bAbI-layout data set (memnet.data.h5): 12 words, memories of up to 7 sentences
// of up to 5 words, so that the model's window (--memory-size 5) cuts some.
void write_qa_data(const test::TempDir& dir) {
  std::mt19937 gen(11);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  std::vector<std::string> words = data::Vocab().tokens();
  for (int w = 0; w < 12; ++w) words.push_back(std::string(1, 'w').append(std::to_string(w)));
  const data::Vocab vocab = data::Vocab::from_tokens(words);
  const int V = static_cast<int>(vocab.size());
  io::File f = io::File::create(dir.file("memnet.data.h5"));
  for (const auto& [split, n] : {std::pair{"train", 64}, std::pair{"valid", 8}, std::pair{"test", 24}}) {
    memnet::QaSplit s;
    s.story = Tensor({n, 7, 5}, DType::i32);
    s.story_len = Tensor({n}, DType::i32);
    s.question = Tensor({n, 3}, DType::i32);
    s.answer = Tensor({n}, DType::i32);
    s.support = Tensor::from_ints({n, 1}, std::vector<int32_t>(static_cast<size_t>(n), -1));
    s.task = Tensor::from_ints({n}, std::vector<int32_t>(static_cast<size_t>(n), 1));
    for (int i = 0; i < n; ++i) {
      s.story_len.idata()[i] = draw(1, 7);
      for (int k = 0; k < s.story_len.idata()[i]; ++k)
        for (int w = draw(1, 5) - 1; w >= 0; --w) s.story.all().idata()[(i * 7 + k) * 5 + w] = draw(4, V - 1);
      for (int w = draw(1, 3) - 1; w >= 0; --w) s.question.all().idata()[i * 3 + w] = draw(4, V - 1);
      s.answer.idata()[i] = draw(4, V - 1);
    }
    memnet::write_qa_split(f, split, s);
  }
  data::write_vocab(f, memnet::kQaVocab, vocab);
  f.commit();
}

// Trains a memory network with `options` on memnet.data.h5 (made once per dir), then writes its
// attention and predictions on the test split.
void memnet_case(const test::TempDir& dir, const std::string& name, const std::string& options) {
  if (!std::filesystem::exists(dir.file("memnet.data.h5"))) write_qa_data(dir);
  std::string line = "{memnet} train --data memnet.data.h5 --model ";   // appended piecewise (GCC 12, -Wrestrict)
  line += model_file(name);
  line += ' ';
  line += options;
  line +=
      " --embedding-size 6 --hops 2 --memory-size 5 --batch-size 16 --steps 3 --lr 0.5 --seed 2 --threads 1 --quiet";
  const test::ShellResult r = test::run_tools(dir, line, {{"{memnet}", "attn-memnet"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
  const memnet::MemnetFile m = memnet::load_memnet(dir.file(model_file(name)));
  const io::File data = io::File::open_read(dir.file("memnet.data.h5"));
  const memnet::QaSplit test = memnet::read_qa_split(data, "test", m.vocab.size());
  std::vector<int64_t> index(static_cast<size_t>(test.size()));
  std::iota(index.begin(), index.end(), int64_t{0});
  const memnet::QaBatch batch = test.gather(index);
  REQUIRE(batch.story.dim(1) > 5);   // some memories are longer than the window
  const memnet::MemN2NResult a = m.model.answer(batch);
  io::File f = io::File::create(dir.file(batch_file(name)));
  f.write_all("/", {{"story", batch.story},
                    {"story_len", batch.story_len},
                    {"question", batch.question},
                    {"attention", a.attention},
                    {"predictions", a.predictions}});
  f.commit();
}

}  // namespace

TEST_CASE("formats: numpy reloads a memnet (every encoding, adjacent and layerwise) and reproduces its attention",
          "[integration][formats]") {
  test::TempDir dir;
  memnet_case(dir, "mn_pe_adjacent", "--encoding position --tying adjacent");
  memnet_case(dir, "mn_bow_layerwise", "--encoding bow --tying layerwise --no-temporal-encoding");
  memnet_case(dir, "mn_pe_layerwise", "--encoding position --tying layerwise");
  memnet_case(dir, "mn_pef_adjacent", "--encoding position-fixed --empty-slots --tying adjacent");
  check_reload(dir, {"mn_pe_adjacent", "mn_bow_layerwise", "mn_pe_layerwise", "mn_pef_adjacent"});
}
