# The gene-expression API of skyhook from R, through reticulate: every
# function returns a data.frame (or a character vector). Results cross from
# Python as plain lists per column (reticulate 1.28 cannot convert NumPy 2).
#
#   source("r/skyhook_expression.R")
#   skyhook_python("/path/to/skyhook/.venv/bin/python")
#   top <- skyhook_ttest("file:///abs/store", "pbmc", "bulk_labels", method = "welch")

skyhook_python <- function(python) {
  reticulate::use_python(python, required = TRUE)
  invisible(TRUE)
}

.skyhook_bridge <- function() reticulate::import("skyhook.expression.r_bridge")

.skyhook_frame <- function(columns) {
  # A Python None arrives as NULL, which unlist() would drop: NA keeps every row.
  # An empty column stays a column (of no rows): unlist() of nothing is NULL.
  present <- function(column) {
    if (length(column) == 0) return(logical(0))
    unlist(lapply(column, function(value) if (is.null(value)) NA else value))
  }
  frame <- as.data.frame(lapply(columns, present), stringsAsFactors = FALSE)
  rownames(frame) <- NULL
  frame
}

skyhook_ttest <- function(store, matrix, groupby, domain = "default", method = "welch",
                          reference = "rest", groups = NULL, genes = NULL, cells = NULL, tie_correct = FALSE,
                          pts = FALSE, markers = NULL) {
  .skyhook_frame(.skyhook_bridge()$ttest(store, matrix, groupby, domain = domain, method = method,
                                         reference = reference, groups = groups, genes = genes, cells = cells,
                                         tie_correct = tie_correct, pts = pts, markers = markers))
}

skyhook_group_stats <- function(store, matrix, groupby = NULL, domain = "default", genes = NULL, cells = NULL) {
  .skyhook_frame(.skyhook_bridge()$group_stats(store, matrix, groupby = groupby, domain = domain,
                                               genes = genes, cells = cells))
}

skyhook_pseudobulk <- function(store, matrix, by, domain = "default", genes = NULL, cells = NULL) {
  .skyhook_frame(.skyhook_bridge()$pseudobulk(store, matrix, by, domain = domain, genes = genes, cells = cells))
}

skyhook_highly_variable_genes <- function(store, matrix, domain = "default", n_top_genes = NULL, genes = NULL,
                                          cells = NULL, flavor = "cell_ranger") {
  .skyhook_frame(.skyhook_bridge()$highly_variable_genes(store, matrix, domain = domain, n_top_genes = n_top_genes,
                                                         genes = genes, cells = cells, flavor = flavor))
}

skyhook_cells <- function(store, matrix, domain = "default", filter = NULL, columns = NULL) {
  .skyhook_frame(.skyhook_bridge()$cell_table(store, matrix, domain = domain, filter = filter, columns = columns))
}

skyhook_genes <- function(store, matrix, domain = "default", filter = NULL, columns = NULL) {
  .skyhook_frame(.skyhook_bridge()$gene_table(store, matrix, domain = domain, filter = filter, columns = columns))
}

skyhook_domains <- function(store) unlist(.skyhook_bridge()$domains(store))

skyhook_matrices <- function(store, domain = "default") .skyhook_frame(.skyhook_bridge()$matrices(store, domain))

skyhook_import <- function(store, name, path, domain = "default", metadata = list()) {
  invisible(.skyhook_bridge()$import_matrix(store, name, path, domain = domain, metadata = metadata))
}
