// Encoding a Picture's recording as PNG, SVG or PDF, and writing it atomically.
#include <cairo-pdf.h>
#include <cairo-svg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "attn/core/error.hpp"
#include "attn/io/output_file.hpp"
#include "canvas.hpp"

namespace attn::plot {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// White background, then the recorded drawing, scaled.
void replay(cairo_surface_t* target, const Picture::Impl& pic, double scale) {
  cairo_t* cr = cairo_create(target);
  cairo_scale(cr, scale, scale);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_surface(cr, pic.recording, 0, 0);
  cairo_paint(cr);
  const cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(std::string("cairo: cannot render the picture: ") + cairo_status_to_string(status));
}

void check_surface(cairo_surface_t* s, const char* what) {
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    const std::string msg = cairo_status_to_string(cairo_surface_status(s));
    cairo_surface_destroy(s);
    throw Error(std::string("cairo: cannot create the ") + what + " surface: " + msg);
  }
}

}  // namespace

Format format_from_name(const std::string& name) {
  const std::string n = lower(name);
  if (n == "png") return Format::png;
  if (n == "svg") return Format::svg;
  if (n == "pdf") return Format::pdf;
  throw ConfigError("unknown picture format '" + name + "' (use png, svg or pdf)");
}

Format format_for_path(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext.empty())
    throw ConfigError("cannot tell the picture format of '" + path + "': name it .png, .svg or .pdf");
  try {
    return format_from_name(ext.substr(1));
  } catch (const ConfigError&) {
    throw ConfigError("cannot tell the picture format of '" + path + "': name it .png, .svg or .pdf");
  }
}

const char* format_name(Format format) {
  switch (format) {
    case Format::png: return "png";
    case Format::svg: return "svg";
    case Format::pdf: return "pdf";
  }
  return "?";
}

double Picture::width() const { return impl_->width; }
double Picture::height() const { return impl_->height; }
const std::vector<Rect>& Picture::panels() const { return impl_->panels; }

std::string Picture::encode(Format format, double scale) const {
  std::string out;
  const Impl& pic = *impl_;
  if (format == Format::png) {
    if (!(scale > 0)) throw ConfigError("picture scale must be > 0");
    const int w = static_cast<int>(std::ceil(pic.width * scale - 1e-9));
    const int h = static_cast<int>(std::ceil(pic.height * scale - 1e-9));
    if (w > 32767 || h > 32767)
      throw ConfigError("picture of " + std::to_string(w) + " x " + std::to_string(h) +
                        " pixels is too large for PNG (at most 32767 a side): lower the cell size or scale");
    cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    check_surface(s, "PNG");
    try {
      replay(s, pic, scale);
    } catch (...) {
      cairo_surface_destroy(s);
      throw;
    }
    const cairo_status_t st = cairo_surface_write_to_png_stream(s, append, &out);
    cairo_surface_destroy(s);
    if (st != CAIRO_STATUS_SUCCESS) throw Error(std::string("cairo: PNG encoding failed: ") + cairo_status_to_string(st));
    return out;
  }
  cairo_surface_t* s = format == Format::svg
                           ? cairo_svg_surface_create_for_stream(append, &out, pic.width, pic.height)
                           : cairo_pdf_surface_create_for_stream(append, &out, pic.width, pic.height);
  check_surface(s, format_name(format));
  if (format == Format::svg) cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
  if (format == Format::pdf) cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "attnlab attn-plot");
  try {
    replay(s, pic, 1.0);
  } catch (...) {
    cairo_surface_destroy(s);
    throw;
  }
  cairo_surface_finish(s);   // flushes the whole document into `out`
  const cairo_status_t st = cairo_surface_status(s);
  cairo_surface_destroy(s);
  if (st != CAIRO_STATUS_SUCCESS)
    throw Error(std::string("cairo: ") + format_name(format) + " encoding failed: " + cairo_status_to_string(st));
  return out;
}

void Picture::save(const std::string& path, Format format, double scale) const {
  // "-", a device, or atomically over a regular file; a FIFO or folder is refused (io/output_file.hpp).
  io::write_bytes(path, encode(format, scale));
}

}  // namespace attn::plot
