"""Each curation step as one straight line: config -> plan -> run -> merge -> artifacts."""

