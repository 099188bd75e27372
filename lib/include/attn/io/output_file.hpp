// Where an output goes and how it is written without destroying anything: every writer of
// attnlab (io::File, io::copy_file_atomically, the pictures of attn-plot) goes through here.
//
// resolve_output() decides by what is at the path now:
//   "-"                      standard output: the whole output is built, then streamed there
//   a character device       streamed to the device (/dev/null, a terminal, /dev/full), never
//                            replaced: the device stays a device
//   a regular file, or none  written to a hidden temporary file beside it, then fsynced and
//                            renamed over it (TempFile): the path holds the old file or the new
//                            one, never a part
//   a symbolic link          followed (to its final target): the target is replaced as above
//                            and the link stays a link
//   a FIFO, folder, socket   refused: ConfigError naming the path (a usage error, exit 2); it is
//   or block device          never opened, replaced or removed
//
// Temporary files are named `.<name>.tmp.<pid>.<n>` beside their target. They cannot outlive
// their process unnoticed: remove_temp_files_on_signals() makes SIGINT, SIGTERM and SIGHUP
// remove them before the process dies, and a process killed by SIGKILL (or a crash) leaves one
// that the next TempFile for the same target removes, as its pid is no longer alive
// (collect_stale_temp_files). docs/ARCHITECTURE.md, "Outputs", says why not O_TMPFILE.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace attn::io {

enum class OutputMode : uint8_t { standard_output, device, replace };

struct OutputTarget {
  OutputMode mode = OutputMode::replace;
  std::string path;     // as given
  std::string target;   // replace: the file replaced or created (symbolic links followed);
                        // device: the device; standard_output: "-"
};

// What writing to `path` does (see above). Throws ConfigError for a FIFO, folder, socket, block
// device or a loop of symbolic links, and IoError when a new file's folder does not exist.
OutputTarget resolve_output(const std::string& path);

// The hidden temporary file beside `target` that an output is written to before it replaces
// the target. Constructing one removes stale temporaries of the same target (dead pids) and
// registers the name for removal on SIGINT/SIGTERM/SIGHUP; it does not create the file (the
// writer does). Destroying it unpublished removes the file.
class TempFile {
 public:
  explicit TempFile(std::string target);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& target() const { return target_; }
  // fsyncs the finished temporary file, renames it over the target and fsyncs the folder.
  // IoError naming `label` (the path the user gave) on failure; the temporary file then stays
  // until the TempFile is destroyed.
  void publish(const std::string& label);

 private:
  std::string target_, path_;
  int slot_ = -1;          // in the signal handler's list; -1: not listed (list full)
  bool published_ = false;
};

// Removes the temporary files `.<name>.tmp.<pid>.<n>` of `target` whose process is no longer
// alive (kill(pid, 0) fails with ESRCH); returns how many were removed. Never touches the
// temporaries of this process or of a live one.
int collect_stale_temp_files(const std::string& target);

// Removes every temporary file of this process not yet published or discarded.
// Async-signal-safe (only unlink), for signal handlers.
void remove_temp_files_now() noexcept;
// Installs handlers for SIGINT, SIGTERM and SIGHUP (those not ignored) that call
// remove_temp_files_now() and then end the process by the same signal, as if unhandled.
void remove_temp_files_on_signals();

// Writes `bytes` as the whole of the output `path` (resolve_output's rules): to standard
// output, to a device, or atomically through a TempFile. IoError naming the path on failure.
void write_bytes(const std::string& path, std::string_view bytes);

}  // namespace attn::io
