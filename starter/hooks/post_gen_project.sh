#!/usr/bin/env bash
# After `sam init --location` or `cookiecutter`: say what to do next. (A shell hook: SAM CLI's
# bundled builds refuse Python hooks.)
set -eu
cat <<NEXT

{{ cookiecutter.project_name }} is ready in $(pwd)
{%- if cookiecutter.lambda_inbox_version %}
(lambda-inbox {{ cookiecutter.lambda_inbox_version }} from the package index)
{%- else %}
(lambda-inbox from the checkout {{ cookiecutter.lambda_inbox_checkout }})
{%- endif %}

  cd {{ cookiecutter.project_slug }}
  make test       # a virtualenv in .venv with the library and its testing kit, then the tests
  make validate   # sam validate --lint (SAM CLI in .venv-sam, an environment of its own)
  make local      # the template on local services until Ctrl-C

Then \`sam deploy --guided\` (README.md says more).
NEXT
