import { readdirSync, readFileSync } from 'node:fs'
import { isBuiltin } from 'node:module'
import { join } from 'node:path'
import ts from 'typescript'

/**
 * `make check`: every package src/ loads at run time is in `dependencies`, so that
 * `npm ci --omit=dev` installs what the compiled server needs. Type-only imports are
 * erased by the compiler and may name devDependencies. Exits 1 on any missing package.
 */

const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
  dependencies?: Record<string, string>
}
const declared = new Set(Object.keys(manifest.dependencies ?? {}))

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return /\.[cm]?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })

/** `@scope/name/sub/path.js` → `@scope/name`, `name/sub` → `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/')

const typeOnly = (clause: ts.ImportClause | undefined) => {
  if (!clause) return false // `import 'x'` runs x
  if (clause.isTypeOnly) return true
  const bindings = clause.namedBindings
  return (
    !clause.name &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  )
}

/** Specifiers a file loads when it runs: value imports, re-exports, import(), require(). */
function runtimeSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && !typeOnly(node.importClause)) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text)
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text)
    } else if (ts.isCallExpression(node) && ts.isStringLiteralLike(node.arguments[0] ?? node)) {
      const callee = node.expression
      const loads =
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(callee) && callee.text === 'require') ||
        (ts.isPropertyAccessExpression(callee) &&
          ts.isIdentifier(callee.expression) &&
          callee.expression.text === 'require' &&
          callee.name.text === 'resolve')
      if (loads) found.push((node.arguments[0] as ts.StringLiteralLike).text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found.filter((specifier) => !specifier.startsWith('.') && !isBuiltin(specifier))
}

const missing = new Map<string, Set<string>>()
for (const file of sources('src')) {
  for (const name of runtimeSpecifiers(file).map(packageOf)) {
    if (declared.has(name)) continue
    missing.set(name, (missing.get(name) ?? new Set()).add(file))
  }
}
for (const [name, files] of missing) {
  console.error(
    `${name} is loaded at run time by ${[...files].join(', ')}: move it to dependencies`,
  )
}
if (missing.size > 0) process.exit(1)
console.log('every package src/ loads at run time is in dependencies')
