// attn-data: makes data sets as attnlab HDF5 files and describes any attnlab file.
// Adding a verb is one line here plus its function (verbs.hpp).
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::data_tool;
  // clang-format off
  return attn::cli::dispatch(kTool, argc, argv, {
      {"copy", cmd_copy, "NTM copy task: random bit vectors, then copy them (Graves et al. 2014, 4.1)"},
      {"repeat-copy", cmd_repeat_copy, "NTM repeat copy: copy a sequence a given number of times (4.2)"},
      {"assoc-recall", cmd_assoc_recall, "NTM associative recall: the item after a queried one (4.3)"},
      {"priority-sort", cmd_priority_sort, "NTM priority sort: vectors in order of priority (4.5)"},
      {"reverse", cmd_reverse, "toy translation: the target is the source token sequence reversed"},
      {"sort", cmd_sort, "toy translation: the target is the source tokens sorted by id"},
      {"posenc", cmd_posenc, "print the sinusoidal positional-encoding table (Vaswani et al. 2017, 3.5)"},
      {"multi30k", cmd_multi30k, "Multi30k translation (Elliott et al. 2016): tokenised, vocabularies, splits"},
      {"parallel", cmd_parallel, "any line-aligned parallel text pair (plain or gzip) as a translation set"},
      {"subword", cmd_subword, "a SentencePiece subword model (BPE or unigram) trained on raw training text"},
      {"distil", cmd_distil, "a translation set whose training targets are a teacher's translations (Kim & Rush 2016)"},
      {"babi", cmd_babi, "bAbI question answering v1.2 (Weston et al. 2015): stories, questions, supporting facts"},
      {"mnist-strips", cmd_mnist_strips, "image captioning: strips of MNIST digits, captioned with the digits' words"},
      {"shapes", cmd_shapes, "image captioning: two coloured shapes, captioned with their spatial relation"},
      {"babi-cls", cmd_babi_cls, "bAbI as classification: story (segment 0) + question (1) -> the one-word answer"},
      {"text", cmd_text, "any plain-text or gzip file as a language-modelling set (pre-training, --arch lm/mlm)"},
      {"pairs", cmd_pairs, "sentence pairs of a parallel corpus: is B the translation of A (BERT's pair task)"},
      {"info", cmd_info, "summarise any attnlab HDF5 file: format, command, datasets, attributes"},
  });
  // clang-format on
}
