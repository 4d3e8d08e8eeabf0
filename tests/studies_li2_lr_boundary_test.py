"""Tests for jaxdyn.studies.li2_lr_boundary: node energies over kept checkpoints, per lr and c."""
import os

from absl.testing import absltest

from jaxdyn.studies import li2_lr_boundary as study


class LrBoundaryStudyTest(absltest.TestCase):

  def test_config_keeps_every_checkpoint(self):
    config = study.boundary_config(41, study.CRITICAL_RATIO_MULTIPLIER, (0.002, 0.005), seeds=4,
                                   steps=3000, loss='cross_entropy', hidden=512,
                                   checkpoint_every=250)
    self.assertEqual(config.data.group, 'Z41')
    self.assertEqual(config.sweep.lr, (0.002, 0.005))
    self.assertEqual(config.train.keep_checkpoints, 13)

  def test_band_over_two_cs(self):
    out, lines = self.create_tempdir().full_path, []
    cs = (3.0, 4.0)
    rows, tables = study.lr_boundary(out, [5], cs, [0.01], seeds=1, steps=4, loss='mse',
                                     hidden=8, checkpoint_every=2, name_by_c=True,
                                     echo=lines.append)
    self.assertEqual([(r['c'], r['lr'], r['seed']) for r in rows], [(3.0, 0.01, 0), (4.0, 0.01, 0)])
    self.assertLen(tables, 2)
    self.assertTrue(lines[0].startswith('Z5_c3: training'))
    self.assertTrue(os.path.exists(os.path.join(out, 'lr_boundary_Z5_c3.png')))
    table, band = study.write_outputs(out, rows, tables, cs, steps=4, hidden=8, loss='mse')
    self.assertTrue(table.startswith('c = 3\n\n'))
    self.assertEqual(band, os.path.join(out, 'lr_boundary_band.png'))
    self.assertTrue(os.path.exists(band))
    self.assertIsNone(study.write_outputs(out, rows[:1], tables[:1], cs[:1], steps=4, hidden=8,
                                          loss='mse')[1])


if __name__ == '__main__':
  absltest.main()
