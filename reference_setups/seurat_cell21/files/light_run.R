# Light run of the WNN workflow (vignettes/weighted_nearest_neighbor_analysis.Rmd) on pbmc_small,
# which ships with SeuratObject, in place of the bmcite CITE-seq set (SeuratData's host is not
# reachable from the machine). Usage: Rscript light_run.R <library> <outdir>
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(normalizePath(args[1]), .libPaths()))
outdir <- args[2]
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
suppressPackageStartupMessages(library(Seurat))
cat("Seurat", as.character(packageVersion("Seurat")), "from", find.package("Seurat"), "\n")
set.seed(42)
counts <- GetAssayData(pbmc_small, slot = "counts")
obj <- CreateSeuratObject(counts = counts, project = "pbmc_small")
obj <- NormalizeData(obj, verbose = FALSE)
obj <- FindVariableFeatures(obj, verbose = FALSE)
obj <- ScaleData(obj, verbose = FALSE)
obj <- RunPCA(obj, npcs = 20, verbose = FALSE)
# The second "modality": a PCA on the genes that are not variable features, as the vignette's
# ADT reduction (apca) beside the RNA one.
other <- setdiff(rownames(obj), VariableFeatures(obj)[1:100])
obj <- RunPCA(obj, features = other, npcs = 10, reduction.name = "apca", reduction.key = "APC_",
              verbose = FALSE)
obj <- FindNeighbors(obj, dims = 1:10, verbose = FALSE)
obj <- FindClusters(obj, resolution = 1, verbose = FALSE)
obj <- FindMultiModalNeighbors(obj, reduction.list = list("pca", "apca"),
                               dims.list = list(1:10, 1:8), k.nn = 10, knn.range = 40,
                               verbose = FALSE)
obj <- FindClusters(obj, graph.name = "wsnn", resolution = 1, verbose = FALSE)
obj <- RunUMAP(obj, nn.name = "weighted.nn", reduction.name = "wnn.umap",
               reduction.key = "wnnUMAP_", verbose = FALSE)
obj <- RunUMAP(obj, dims = 1:10, verbose = FALSE)
saveRDS(obj, file.path(outdir, "pbmc_small_wnn.rds"))
png(file.path(outdir, "umap.png"), width = 800, height = 600)
print(DimPlot(obj, reduction = "umap", label = TRUE))
dev.off()
cat("cells:", ncol(obj), "\n")
cat("clusters:", length(levels(Idents(obj))), "\n")
cat("rna clusters:", length(unique(obj$RNA_snn_res.1)), "\n")
cat("reductions:", paste(Reductions(obj), collapse = " "), "\n")
cat("graphs:", paste(Graphs(obj), collapse = " "), "\n")
