terraform {
  required_version = ">= 1.5.0"
  # No providers: the built-in terraform_data resource runs the machine commands, so the local
  # backend needs no provider download.
}
