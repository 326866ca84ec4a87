// Writes ../assets/redoc.js: Redoc's standalone bundle as published, led by
// the licences of everything it bundles (which the published bundle keeps in
// files of their own) and without its source map's comment, as the map is
// not served.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

const dir = 'node_modules/redoc/bundles';
const { version } = JSON.parse(readFileSync('node_modules/redoc/package.json', 'utf8'));
const bundle = readFileSync(`${dir}/redoc.standalone.js`, 'utf8')
  .replace(/^\/\*! For license information please see [^*]*\*\/\n/, '')
  .replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
const licences = readdirSync(dir)
  .filter((f) => f.endsWith('.LICENSE.txt') && !f.includes('.lib.'))
  .sort()
  .map((f) => readFileSync(`${dir}/${f}`, 'utf8').trim());
const banner = `/*! seckill API reference. Redoc ${version}'s standalone bundle (MIT License, ` +
  'Copyright (c) 2015-present, Rebilly, Inc.); the licences of what it bundles follow. */';
writeFileSync('../assets/redoc.js', [banner, ...licences, bundle].join('\n'));
