/**
 * Joins the line coverage of `npm test`'s phases (each jest run writes its own coverage-final.json)
 * into one report: coverage/coverage-final.json, coverage/lcov-report/ and a summary on stdout.
 * The istanbul libraries are the ones jest's own coverage reporter uses, found through it.
 */
const fs = require('node:fs');
const path = require('node:path');

const from = [require.resolve('@jest/reporters')];
const load = (name) => require(require.resolve(name, { paths: from }));

/** Merges the `coverage-final.json` of each of `dirs` (those that exist) into `outDir`; returns the line percentage. */
function mergeCoverage(dirs, outDir) {
  const libCoverage = load('istanbul-lib-coverage');
  const libReport = load('istanbul-lib-report');
  const reports = load('istanbul-reports');
  const map = libCoverage.createCoverageMap({});
  for (const dir of dirs) {
    const file = path.join(dir, 'coverage-final.json');
    if (fs.existsSync(file)) map.merge(JSON.parse(fs.readFileSync(file, 'utf8')));
  }
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'coverage-final.json'), JSON.stringify(map.toJSON()));
  const context = libReport.createContext({ dir: outDir, coverageMap: map });
  for (const name of ['text-summary', 'json-summary', 'lcov']) reports.create(name).execute(context);
  return map.getCoverageSummary().lines.pct;
}

module.exports = { mergeCoverage };
