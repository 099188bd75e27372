// shapes: scene sampling, rendering and captions (see shapes.hpp).
#include "attn/datasets/shapes.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "attn/core/rng.hpp"
#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

enum Relation { kAbove, kBelow, kLeftOf, kRightOf, kRelations };
enum ShapeKind { kCircle, kSquare, kTriangle, kShapes };
constexpr int kColours = 4;
constexpr float kRgb[kColours][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}};   // red green blue yellow
constexpr int64_t kSamples = 4;   // sub-pixel samples per axis
constexpr int64_t kMaxWords = 8;  // "a red circle left of a blue square"
constexpr int64_t kMaxPlacements = 100000;
// The relation's axis must dominate the centre offset by this factor (within about 27 degrees
// of the axis), so that no scene is a diagonal that reads as two relations.
constexpr int64_t kDominance = 2;

// Word ids: shapes_words() in order from id 4.
constexpr int32_t kWordA = data::kNumReserved, kWordAbove = kWordA + 1, kWordBelow = kWordA + 2,
                  kWordLeft = kWordA + 3, kWordRight = kWordA + 4, kWordOf = kWordA + 5,
                  kFirstColour = kWordA + 6, kFirstShape = kFirstColour + kColours;

// Whether the point (u, v) of an s x s square (u right, v down) is inside the shape.
bool inside(int shape, double u, double v, double s) {
  const double h = s / 2;
  switch (shape) {
    case kCircle: return (u - h) * (u - h) + (v - h) * (v - h) <= h * h;
    case kSquare: return true;
    default: return std::abs(2 * u - s) <= v;   // apex (s/2, 0), base v = s
  }
}

// One shape at one size: its coverage of each pixel of its s x s square, and its ink box there.
struct Sprite {
  int64_t size = 0;
  std::vector<float> coverage;   // [s, s]
  Box ink;
};

Sprite render(int shape, int64_t s) {
  Sprite sp;
  sp.size = s;
  sp.coverage.assign(static_cast<size_t>(s * s), 0.0f);
  for (int64_t r = 0; r < s; ++r)
    for (int64_t c = 0; c < s; ++c) {
      int hits = 0;
      for (int64_t i = 0; i < kSamples; ++i)
        for (int64_t j = 0; j < kSamples; ++j)
          hits += inside(shape, static_cast<double>(c) + (static_cast<double>(j) + 0.5) / kSamples,
                         static_cast<double>(r) + (static_cast<double>(i) + 0.5) / kSamples, static_cast<double>(s));
      sp.coverage[static_cast<size_t>(r * s + c)] = static_cast<float>(hits) / (kSamples * kSamples);
    }
  sp.ink = ink_box(sp.coverage.data(), s, s, s);
  return sp;
}

struct Object {
  int colour = 0, shape = 0;
  int64_t size = 0, y = 0, x = 0;
  Box box;   // ink box in the image
};

// Whether "a <rel> b" holds for the ink boxes (shapes.hpp); centres in doubled coordinates.
bool shows(int rel, const Box& a, const Box& b) {
  const int64_t dy = (b.y0 + b.y1) - (a.y0 + a.y1), dx = (b.x0 + b.x1) - (a.x0 + a.x1);
  const bool vertical = std::abs(dy) >= kDominance * std::abs(dx);
  const bool horizontal = std::abs(dx) >= kDominance * std::abs(dy);
  switch (rel) {
    case kAbove: return vertical && a.y1 <= b.y0;
    case kBelow: return vertical && b.y1 <= a.y0;
    case kLeftOf: return horizontal && a.x1 <= b.x0;
    default: return horizontal && b.x1 <= a.x0;
  }
}

void check_config(const ShapesConfig& cfg) {
  const std::string task = "shapes: ";
  if (cfg.min_size < 4) throw ConfigError(task + "min_size must be >= 4, got " + str(cfg.min_size));
  if (cfg.max_size < cfg.min_size)
    throw ConfigError(task + "max_size (" + str(cfg.max_size) + ") must be >= min_size (" + str(cfg.min_size) + ")");
  const int64_t side = std::min(cfg.height, cfg.width);
  if (2 * cfg.max_size > side)
    throw ConfigError(task + "two objects of max_size " + str(cfg.max_size) + " must fit side by side and one above "
                      "the other: height and width must be >= " + str(2 * cfg.max_size) + ", got " +
                      str(cfg.height) + " x " + str(cfg.width));
}

}  // namespace

std::vector<std::string> shapes_words() {
  return {"a", "above", "below", "left", "right", "of",   // ids 4-9: the article and the relations
          "red", "green", "blue", "yellow",                 // 10-13: the colours, in kRgb's order
          "circle", "square", "triangle"};                  // 14-16: the shapes, in ShapeKind's order
}

Splits<CaptionSplit> make_shapes(const ShapesConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  check_sizes("shapes", sizes);
  check_config(cfg);
  std::vector<Sprite> sprites[kShapes];   // sprites[shape][size - min_size]
  for (int shape = 0; shape < kShapes; ++shape)
    for (int64_t s = cfg.min_size; s <= cfg.max_size; ++s) sprites[shape].push_back(render(shape, s));
  const int64_t H = cfg.height, W = cfg.width;
  const auto sprite = [&](const Object& o) -> const Sprite& {
    return sprites[o.shape][static_cast<size_t>(o.size - cfg.min_size)];
  };

  return draw_splits<CaptionSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                    const char* split) {
    CaptionSplit s(split, n, 3, H, W, kMaxWords + 1);
    draw_disjoint("shapes", split, n, rng, earlier, drawn, [&](Rng& r, int64_t e) {
      Object a, b;
      const int64_t pair = r.uniform_int(kColours * kShapes), other = r.uniform_int(kColours * kShapes - 1);
      const int64_t second = other < pair ? other : other + 1;   // a (colour, shape) unlike the first
      // The caption names first the object earlier in (colour, shape) order, so that a scene has
      // one caption: "A above B" and "B below A" describe the same scene.
      const int64_t first_named = std::min(pair, second), second_named = std::max(pair, second);
      a.colour = static_cast<int>(first_named / kShapes), a.shape = static_cast<int>(first_named % kShapes);
      b.colour = static_cast<int>(second_named / kShapes), b.shape = static_cast<int>(second_named % kShapes);
      const int rel = static_cast<int>(r.uniform_int(kRelations));
      for (Object* o : {&a, &b}) o->size = cfg.min_size + r.uniform_int(cfg.max_size - cfg.min_size + 1);
      for (int64_t tries = 0;; ++tries) {
        if (tries == kMaxPlacements)
          throw ConfigError("shapes: no placement of two objects of sizes " + str(a.size) + " and " + str(b.size) +
                            " in " + str(H) + " x " + str(W) + " showed their relation in " + str(kMaxPlacements) +
                            " draws; use a larger image or smaller objects");
        for (Object* o : {&a, &b}) {
          o->y = r.uniform_int(H - o->size + 1);
          o->x = r.uniform_int(W - o->size + 1);
          o->box = sprite(*o).ink.at(o->y, o->x);
        }
        if (shows(rel, a.box, b.box)) break;
      }

      // The image. Ink boxes are disjoint, so adding coverage never mixes two objects' pixels.
      float* image = s.images.data() + e * 3 * H * W;
      std::fill(image, image + 3 * H * W, 0.0f);
      for (const Object* o : {&a, &b}) {
        const Sprite& sp = sprite(*o);
        for (int ch = 0; ch < 3; ++ch)
          for (int64_t y = 0; y < o->size; ++y)
            for (int64_t x = 0; x < o->size; ++x)
              image[(ch * H + o->y + y) * W + o->x + x] +=
                  kRgb[o->colour][ch] * sp.coverage[static_cast<size_t>(y * o->size + x)];
      }

      std::vector<int32_t> words = {kWordA, kFirstColour + a.colour, kFirstShape + a.shape};
      std::vector<const Box*> boxes = {nullptr, &a.box, &a.box};
      switch (rel) {
        case kAbove: words.push_back(kWordAbove); break;
        case kBelow: words.push_back(kWordBelow); break;
        case kLeftOf: words.insert(words.end(), {kWordLeft, kWordOf}); break;
        default: words.insert(words.end(), {kWordRight, kWordOf}); break;
      }
      boxes.resize(words.size(), nullptr);
      words.insert(words.end(), {kWordA, kFirstColour + b.colour, kFirstShape + b.shape});
      boxes.insert(boxes.end(), {nullptr, &b.box, &b.box});
      s.set_caption(e, words, boxes);

      // The input is the image: the two objects, in their fixed naming order.
      const std::array<int64_t, 10> key = {a.colour, a.shape, a.size, a.y, a.x, b.colour, b.shape, b.size, b.y, b.x};
      return hash_bytes(key.data(), sizeof(key), 0);
    });
    return s;
  });
}

void write_shapes(io::File& file, const Splits<CaptionSplit>& splits) {
  write_captions(file, splits, caption_vocabulary(shapes_words()));
}

}  // namespace attn::datasets
