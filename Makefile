# The two commands of the README: `make run` and `make test`. Each installs what is missing.
SHELL := /bin/bash
# `npm install` honours the lock file; `npm ci` refuses it when the registry lacks some
# platform-only optional packages (seen with @biomejs/cli-*), which this machine never needs.
NPM_INSTALL := npm install --no-audit --no-fund --loglevel=error
STAMP := node_modules/.install-stamp

.PHONY: install generate migrate run start check typecheck lint drift test test-only

install: $(STAMP)

$(STAMP): package.json package-lock.json
	$(NPM_INSTALL)
	@touch $@

## generate: typed signatures in generated/ from openapi.yaml and schema.graphql
generate: $(STAMP)
	npx openapi-typescript openapi.yaml --output generated/openapi.ts --silent
	npx graphql-codegen --config codegen.yml --silent

## migrate: apply migrations to DATABASE_URL, or to the embedded database under DATA_DIR
migrate: $(STAMP)
	npm run --silent migrate

## run: install, generate, migrate and start the service on the embedded defaults
run: generate migrate
	npm start --silent

## check: typecheck, lint, and generated code that matches the specs
check: typecheck lint drift

typecheck: $(STAMP)
	npx tsc --noEmit

lint: $(STAMP)
	npx biome check --error-on-warnings .

drift: generate
	@git diff --exit-code --stat -- generated || { echo "generated/ is stale: run 'make generate' and commit it"; exit 1; }
	@test -z "$$(git status --porcelain -- generated)" || { echo "generated/ has uncommitted files"; exit 1; }

## test: install, check, then the test suites
test: check test-only

test-only: $(STAMP)
	npx vitest run
