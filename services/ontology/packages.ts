import { NotFoundError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { Ontology, OntologyPackage, Project } from '../../db/models';

// A project's ontology and its compiled packages, read by the ontology service and by read
// bindings alike (so neither imports the other). Lookups, so (db, project, …): they run on the
// executor the caller holds, often its transaction.

export async function findOntology(db: Executor, project: Project, forUpdate = false): Promise<Ontology | undefined> {
  const query = Ontology.query(db).findOne({ projectId: project.id, workspaceId: project.workspaceId });
  return forUpdate ? query.forUpdate() : query;
}

export async function requirePackage(db: Executor, project: Project, packageId: string): Promise<OntologyPackage> {
  const ontology = await findOntology(db, project);
  const found = ontology ? await OntologyPackage.query(db).findOne({ id: packageId, ontologyId: ontology.id }) : undefined;
  if (!found) throw new NotFoundError('ontology_package', 'No compiled package with this id in this ontology.');
  return found;
}

export async function activePackage(db: Executor, project: Project): Promise<OntologyPackage | undefined> {
  const ontology = await findOntology(db, project);
  return ontology?.activePackageId ? OntologyPackage.query(db).findById(ontology.activePackageId) : undefined;
}
