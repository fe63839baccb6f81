terraform {
  required_version = ">= 1.7.0" # mock_provider in the terraform test files needs 1.7

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 6.0"
    }
  }
}
