// Type-checks ../deltaq-dashboard.json against the dashboard and panel types that
// @grafana/schema publishes (TypeScript types only; there is no JSON Schema).
//
// The JSON is written out as TypeScript object literals annotated with those
// types, so that the compiler checks every field's type and flags unknown fields
// (excess property checks): the dashboard as a whole against Dashboard, and each
// panel's options and custom field config against its plugin's Options and
// FieldConfig. Then tsc runs over the generated file.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dashboard = JSON.parse(readFileSync(join(here, '..', 'deltaq-dashboard.json'), 'utf8'));

// Panel plugin id -> module of its generated panel config types. Every module
// exports Options; those in withFieldConfig also export FieldConfig.
const withFieldConfig = new Set(['state-timeline', 'timeseries', 'trend']);
const panelcfg = {
  stat: 'stat/panelcfg/x/StatPanelCfg_types.gen',
  'state-timeline': 'statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen',
  timeseries: 'timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen',
  trend: 'trend/panelcfg/x/TrendPanelCfg_types.gen',
};

const lit = (v) => JSON.stringify(v, null, 2);
const ident = (s) => s.replace(/[^A-Za-z0-9]/g, '_');

// The Prometheus data source's annotation queries carry fields that
// @grafana/schema's AnnotationQuery does not declare (it models the built-in
// Grafana annotations): they are checked against PromAnnotation below and
// taken out of the dashboard literal, which is checked without them.
const promAnnotationFields = ['expr', 'step', 'titleFormat', 'textFormat', 'tagKeys', 'useValueForTime'];
const promAnnotations = [];
const checked = structuredClone(dashboard);
for (const a of checked.annotations?.list ?? []) {
  if (a.datasource?.type !== 'prometheus') continue;
  const own = {};
  for (const k of promAnnotationFields) {
    if (k in a) {
      own[k] = a[k];
      delete a[k];
    }
  }
  promAnnotations.push(own);
}

const lines = [
  `import type { Dashboard } from '@grafana/schema';`,
  `import type { Json } from '../json';`,
  `interface PromAnnotation { expr: string; step?: string; titleFormat?: string; textFormat?: string; tagKeys?: string; useValueForTime?: boolean }`,
];
for (const [type, mod] of Object.entries(panelcfg)) {
  lines.push(`import type * as ${ident(type)} from '@grafana/schema/dist/esm/raw/composable/${mod}';`);
}
lines.push('', `export const dashboard: Json<Dashboard> = ${lit(checked)};`, '');
promAnnotations.forEach((a, i) => lines.push(`export const promAnnotation${i}: PromAnnotation = ${lit(a)};`, ''));

let errors = 0;
for (const panel of dashboard.panels ?? []) {
  const ns = panelcfg[panel.type] && ident(panel.type);
  if (!ns) {
    console.error(`panel ${panel.id} (${panel.title}): no panel config types known for type "${panel.type}"`);
    errors++;
    continue;
  }
  lines.push(`export const options${panel.id}: Json<${ns}.Options> = ${lit(panel.options ?? {})};`);
  if (withFieldConfig.has(panel.type)) {
    lines.push(
      `export const custom${panel.id}: Json<${ns}.FieldConfig> = ${lit(panel.fieldConfig?.defaults?.custom ?? {})};`,
    );
  } else if (panel.fieldConfig?.defaults?.custom !== undefined) {
    console.error(`panel ${panel.id} (${panel.title}): type "${panel.type}" has no custom field config`);
    errors++;
  }
  lines.push('');
}
if (errors > 0) process.exit(1);

mkdirSync(join(here, 'generated'), { recursive: true });
writeFileSync(join(here, 'generated', 'dashboard.gen.ts'), lines.join('\n'));

const tsc = join(here, 'node_modules', 'typescript', 'bin', 'tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  console.error('deltaq-dashboard.json does not type-check against @grafana/schema (errors above).');
  process.exit(1);
}
console.log(`deltaq-dashboard.json type-checks against @grafana/schema (${dashboard.panels.length} panels).`);
