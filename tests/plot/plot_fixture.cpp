// The attn-plot test fixture (see plot_fixture.hpp), written with attn::io::File.
#include "plot_fixture.hpp"

#include "attn/io/hdf5_file.hpp"

namespace attn::test {

Tensor fixture_cross(int64_t n, int64_t h) {
  Tensor m = Tensor::full({3, 4}, 0.1f * static_cast<float>(n + h));
  m.at((h + n) * 4 + (3 - h - n)) = 1.0f;
  return m;
}

void write_plot_fixture(const std::string& path) {
  io::File f = io::File::create(path);
  io::write_file_info(f, {"attnlab/output", 1, "transformer", "test", "test"});

  Tensor cross({2, 2, 3, 4}), layer1({2, 2, 3, 4}), stack({2, 2, 2, 3, 4});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h) {
      const Tensor m = fixture_cross(n, h);
      for (int64_t i = 0; i < 12; ++i) {
        cross.at((n * 2 + h) * 12 + i) = m.at(i);
        layer1.at((n * 2 + h) * 12 + i) = m.at(i) + 1;
        for (int64_t l = 0; l < 2; ++l) stack.at(((n * 2 + l) * 2 + h) * 12 + i) = m.at(i) + 10.0f * static_cast<float>(l);
      }
    }
  f.write("/attention/cross", cross);
  f.write("/attention/layers/layer1", layer1);
  f.write("/attention/stack", stack);

  f.write_strings("/vocab/src", {"<pad>", "<s>", "</s>", "<unk>", "ein", "Mann", "schläft"});
  f.write_strings("/vocab/short", {"<pad>", "<s>", "</s>", "<unk>", "x"});
  f.write_strings("/vocab/tgt", {"<pad>", "<s>", "</s>", "<unk>", "a", "man", "sleeps", "the", "dog", "runs", "café"});
  f.write("/test/src", Tensor::from_ints({2, 5}, {4, 5, 2, 0, 0, 4, 5, 6, 2, 0}));
  f.write("/predictions", Tensor::from_ints({2, 4}, {4, 5, 2, 0, 4, 5, 6, 0}));
  // Mask-predict's refinement, 3 iterations (tokens, then 1 where re-masked and predicted).
  f.write("/iterations/tokens", Tensor::from_ints({2, 3, 4}, {4, 4, 6, 0,       // a a sleeps
                                                              4, 5, 6, 0,       // a man sleeps
                                                              7, 5, 6, 0,       // the man sleeps
                                                              7, 8, 8, 10,      // the dog dog café
                                                              7, 8, 9, 10,      // the dog runs café
                                                              7, 8, 9, 10}));   // the dog runs café
  f.write("/iterations/masked", Tensor::from_ints({2, 3, 4}, {1, 1, 1, 0,       //
                                                              0, 1, 0, 0,       //
                                                              1, 0, 0, 0,       //
                                                              1, 1, 1, 1,       //
                                                              0, 0, 1, 1,       //
                                                              0, 1, 0, 0}));

  Tensor inputs({1, 6, 4}), write({1, 6, 10}), read({1, 6, 2, 10});
  for (int64_t t = 0; t < 6; ++t) {
    inputs.at(t * 4 + t % 4) = 1;
    write.at(t * 10 + t) = 1;
    read.at((t * 2 + 0) * 10 + t + 1) = 1;
    read.at((t * 2 + 1) * 10 + 9 - t) = 1;
  }
  f.write("/ntm/inputs", inputs);
  f.write("/ntm/write", write);
  f.write("/ntm/read", read);

  f.write("/images", Tensor::full({1, 3, 8, 8}, 0.5f));
  Tensor visual({1, 3, 4});
  visual.at(0 * 4 + 0) = 1;   // "a": top-left
  visual.at(1 * 4 + 3) = 1;   // "man": bottom-right
  visual.at(2 * 4 + 1) = 1;   // padding step
  f.write("/visual", visual);
  f.write("/captions", Tensor::from_ints({1, 3}, {4, 5, 0}));

  Tensor loss({20});
  for (int64_t i = 0; i < 20; ++i) loss.at(i) = 2.0f / static_cast<float>(i + 1);
  f.write("/metrics/train_loss", loss);
  f.write("/metrics/valid_step", Tensor::from_ints({4}, {4, 9, 14, 19}));
  f.write("/metrics/valid_loss", Tensor::from({4}, {0.6f, 0.4f, 0.3f, 0.25f}));

  Tensor hops({1, 3, 5});
  for (int64_t k = 0; k < 3; ++k) hops.at(k * 5 + k) = 0.9f;   // hop k attends sentence k
  f.write("/memnet/hops", hops);
  f.write_strings("/vocab/words", {"<pad>", "<s>", "</s>", "<unk>", "Mary", "John", "went", "to", "the", "kitchen", "garden"});
  f.write("/test/story", Tensor::from_ints({1, 5, 4}, {4, 6, 9, 0,     // Mary went kitchen
                                                       5, 6, 10, 0,    // John went garden
                                                       4, 6, 10, 0,    // Mary went garden
                                                       5, 6, 9, 0,     // John went kitchen
                                                       0, 0, 0, 0}));  // padding
  f.commit();
}

}  // namespace attn::test
