/**
 * `node -r ts-node/register/transpile-only bench/cluster/images/rerender.ts <run.json> [out.md]`:
 * the report of a finished images run written again from its JSON (report.ts changed, no rerun).
 */
import fs from 'node:fs';
import { renderImagesReport, type ImagesRun } from './report';

const [input, output] = process.argv.slice(2);
if (!input) throw new Error('usage: rerender.ts <run.json> [out.md]');
const md = renderImagesReport(JSON.parse(fs.readFileSync(input, 'utf8')) as ImagesRun);
if (output) fs.writeFileSync(output, md);
else process.stdout.write(md);
