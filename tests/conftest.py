"""absltest helpers (create_tempdir, ...) read absl flags: mark them parsed under pytest."""

from absl import flags

flags.FLAGS.mark_as_parsed()
